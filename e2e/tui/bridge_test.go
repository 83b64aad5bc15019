package tui

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
)

// OpenCode (`opencode serve`, the host) runs `questiond bridge` in front
// of an MCP server whose tool elicits a form; its model calls the tool.
// The question reaches the questiond the bridge is configured with, and
// the operator answers it in the real OpenCode TUI attached to that
// questiond, with keys: an option picked by its title, Yes, an integer
// typed, and the optional note left blank. OpenCode's own session history
// then holds the tool's result made of the typed answer: the const of the
// picked title, the integer as a number, the boolean as a boolean, the
// note's default. The TUI shows the question's session titled "<name> via
// <host>", the host being the name OpenCode gives itself in initialize.
// The host is the pinned OpenCode even when QUESTIOND_TUI_VERSION tries
// another release of the TUI.
func TestBridgedElicitationAnsweredInTheTUI(t *testing.T) {
	testenv.Heavy(t, "runs questiond, the OpenCode TUI, OpenCode as a host, questiond bridge and an MCP server")
	const agentToken, key = "tui-bridge-agent-token-0123456789", "deploy"
	tokens := filepath.Join(t.TempDir(), "agent-tokens")
	if err := os.WriteFile(tokens, []byte("opencode="+agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, daemonOptions{args: []string{"--agent-token-file", tokens}})
	clientFile := filepath.Join(t.TempDir(), "client-name")
	oc := opencodeserve.Start(t, opencodeserve.Binary(t), key, bridgedSection(t, key, d.URL, agentToken, clientFile))
	tool := key + "_" + opencodeserve.ReleaseTool
	session := oc.Prompt("Release v2.3, please.")
	q := oc.Asked(testkit.Watch(t, d.URL), session, tool)

	u := attach(t, "tui", d.URL, "--session", q.SessionID)
	screen := u.waitFor("panel", "Release v2.3?", "Production", panelHint)
	host, err := os.ReadFile(clientFile)
	if err != nil || len(host) == 0 {
		t.Fatalf("the upstream did not record its client's name: %v", err)
	}
	wantTitle := key + " via " + string(host)
	if title := sessionTitle(screen); title != wantTitle {
		t.Fatalf("the TUI shows the session titled %q, want %q; the screen:\n%s", title, wantTitle, trimScreen(screen))
	}

	answerRelease(u, oc, session, tool)
	expectReleased(t, oc.ToolEnded(session, tool))
	u.waitGone("answered", panelHint)
	if status, body := d.call(http.MethodGet, "/question", nil); status != http.StatusOK || string(body) != "[]" {
		t.Fatalf("GET /question after the answer: %d %s", status, body)
	}
}

// bridgedSection is OpenCode's "mcp" section that runs the upstream MCP
// server (opencodeserve.Upstream, with clientFile if any) as key behind
// `questiond bridge`, asking the questiond at server as the agent whose
// token is token.
func bridgedSection(t *testing.T, key, server, token string, clientFile ...string) map[string]any {
	t.Helper()
	return map[string]any{key: map[string]any{
		"type":        "local",
		"command":     append([]string{daemonBinary(t), "bridge", "--name", key, "--"}, opencodeserve.Upstream(clientFile...)...),
		"environment": map[string]string{"QUESTIOND_SERVER": server, "QUESTIOND_TOKEN": token},
	}}
}

// answerRelease answers the upstream's release form (shown in u's panel)
// with keys: the option titled Production, the integer 3 typed, Yes, and
// the optional note left blank; OpenCode's call of tool in session must
// still wait until the review is submitted.
func answerRelease(u *tui, oc *opencodeserve.Server, session, tool string) {
	u.t.Helper()
	u.pick("Production")
	u.waitFor("replicas", "Replicas (integer between 1 and 5)", "Type your own answer")
	u.pick("Type your own answer")
	u.typeText("3")
	u.shot("replicas-typed")
	u.keys("Enter")
	u.waitFor("confirm", "Confirm (Yes or No)", "Yes")
	u.pick("Yes")
	u.waitFor("note", `default: "none"`)
	oc.ToolEndedEarly(session, tool)
	u.keys("Tab") // the note stays blank
	u.waitFor("review", "Review", "Target: Production", "Replicas: 3", "Confirm: Yes")
	u.keys("Enter")
}

// expectReleased fails the test unless call, from OpenCode's history, is
// the release tool completed with answerRelease's answer as typed
// content: the const of the picked title, the integer as a number, the
// boolean as a boolean, the note's default.
func expectReleased(t *testing.T, call opencodeserve.ToolState) {
	t.Helper()
	t.Logf("OpenCode's history: %v", call)
	want := map[string]any{"target": "prd", "replicas": 3.0, "confirm": true, "note": "none"}
	if got := resultContent(t, call.Output); call.Status != "completed" || !reflect.DeepEqual(got, want) {
		t.Fatalf("OpenCode's history holds the call %v; want it completed with the content %v", call, want)
	}
}

// pendingTitle matches the session title the TUI's sidebar shows at its
// top right, behind questiond's pending marker: words apart by single
// spaces (the scroll bar may show further right).
var pendingTitle = regexp.MustCompile(`^\s{20,}\[\?\] (\S+(?: \S+)*)`)

// sessionTitle is the title of the session the TUI shows while a question
// is pending in it ("" when the screen shows none).
func sessionTitle(screen string) string {
	for _, line := range strings.Split(screen, "\n") {
		if m := pendingTitle.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// optionLine matches one option of the question panel: "┃  2. Production".
var optionLine = regexp.MustCompile(`┃\s+(\d+)\. (\S+(?: \S+)*)`)

// pick presses the number the question panel shows before the option
// labelled label; the test fails if no option is labelled so.
func (u *tui) pick(label string) {
	u.t.Helper()
	screen := u.capture()
	for _, line := range strings.Split(screen, "\n") {
		if m := optionLine.FindStringSubmatch(line); m != nil && m[2] == label {
			u.keys(m[1])
			return
		}
	}
	u.save("pick-FAILED", screen)
	u.t.Fatalf("no option %q in the question panel:\n%s", label, trimScreen(screen))
}

// resultContent is the content the upstream's tool got, from the line of
// its result that holds it as JSON.
func resultContent(t *testing.T, output string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(output, "\n") {
		if rest, ok := strings.CutPrefix(line, opencodeserve.ContentPrefix); ok {
			var content map[string]any
			if err := json.Unmarshal([]byte(rest), &content); err != nil {
				t.Fatalf("the tool's result %q: %v", output, err)
			}
			return content
		}
	}
	return nil
}
