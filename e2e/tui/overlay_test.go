package tui

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit/launch"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
)

// overlayToken is the agent token of the overlay's agents: the bridge's
// and the tests' own.
const overlayToken = "tui-overlay-agent-token-0123456789"

// overlaySessionTitle is the title of the OpenCode session the overlay's
// TUI shows.
const overlaySessionTitle = "Overlay release"

// overlay is questiond --upstream in front of the real OpenCode (`opencode
// serve`, offline, the fake model), whose MCP server key runs behind
// `questiond bridge` asking that questiond; an OpenCode session; and the
// real TUI attached to questiond, not to OpenCode, showing that session.
type overlay struct {
	d       *daemon
	oc      *opencodeserve.Server
	key     string
	session string
	u       *tui
}

// startOverlay starts the overlay, questiond's store in memory, and waits
// until its TUI shows the session, ready for questions asked after it (the
// full TUI lists no questions when it attaches: it hears of OpenCode's own
// only live).
func startOverlay(t *testing.T) *overlay {
	t.Helper()
	return startOverlayWith(t, daemonOptions{})
}

// startOverlayWith is startOverlay with questiond's options (its store;
// the agents' tokens and --upstream are added).
func startOverlayWith(t *testing.T, opts daemonOptions) *overlay {
	t.Helper()
	const key = "deploy"
	// questiond's address goes into OpenCode's config, and OpenCode's
	// into questiond's flags: questiond's port is chosen first.
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	oc := opencodeserve.Start(t, opencodeserve.Binary(t), key, bridgedSection(t, key, "http://"+addr, overlayToken))
	tokens := filepath.Join(t.TempDir(), "agent-tokens")
	if err := os.WriteFile(tokens, []byte("agent="+overlayToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts.args = append(opts.args, "--agent-token-file", tokens, "--upstream", oc.URL)
	d := startDaemonAt(t, addr, opts)
	session := oc.Session(overlaySessionTitle)
	u := attach(t, "tui", d.URL, "--session", session)
	u.waitFor("attached", overlaySessionTitle, "ctrl+p commands")
	return &overlay{d: d, oc: oc, key: key, session: session, u: u}
}

// regionPanel waits until the TUI shows OpenCode's own question (the fake
// model's call of its question tool, opencodeserve.QuestionArgs).
func (o *overlay) regionPanel(step string) {
	o.u.t.Helper()
	o.u.waitFor(step, opencodeserve.RegionQuestion, opencodeserve.RegionOptions[1], panelHint)
}

// noneLeft fails the test unless nothing is pending any more, neither
// OpenCode's nor questiond's, as operators list them through questiond.
func (o *overlay) noneLeft(t *testing.T) {
	t.Helper()
	if status, body := o.d.call(http.MethodGet, "/question", nil); status != http.StatusOK || string(body) != "[]" {
		t.Fatalf("GET /question through questiond after the answers: %d %s", status, body)
	}
}

// In one TUI attached to questiond in front of OpenCode: OpenCode's own
// question tool asks in the session, and keys answer it (the reply goes
// through questiond to OpenCode, whose history then holds the question
// tool completed with the answer); after it, an agent's POST /elicit
// naming that session shows in the same TUI, keys answer it, and the
// agent gets typed content.
func TestOverlayOpencodeQuestionThenAgentQuestion(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it, questiond bridge, an MCP server and the OpenCode TUI")
	o := startOverlay(t)

	o.oc.PromptIn(o.session, opencodeserve.AskPrompt)
	o.regionPanel("opencode-question")
	o.u.pick(opencodeserve.RegionOptions[1])
	call := o.oc.ToolEnded(o.session, opencodeserve.QuestionTool)
	t.Logf("OpenCode's history: %v", call)
	want := fmt.Sprintf("%q=%q", opencodeserve.RegionQuestion, opencodeserve.RegionOptions[1])
	if call.Status != "completed" || !strings.Contains(call.Output, want) {
		t.Fatalf("OpenCode's history holds its question tool's call %v; want it completed with %s", call, want)
	}
	o.u.waitGone("opencode-answered", panelHint)

	answer := o.d.elicitAs(t.Context(), overlayToken, twoQuestionForm(o.session))
	o.d.waitPending(o.session, 1)
	o.u.waitFor("agent-question", "Database", "Which database should we use?", "Postgres", panelHint)
	answerForm(t, o.u, answer)
	expectFormAnswer(t, answer, answerWithin, "the agent asking in OpenCode's session")
	o.u.waitGone("agent-answered", panelHint)
	o.noneLeft(t)
}

// OpenCode's model calls a tool of an MCP server that runs behind `questiond
// bridge` and elicits: the question shows in the TUI on the session whose
// tool call waits, keys answer it, and OpenCode's history holds the tool's
// result made of the typed answer.
func TestOverlayBridgedElicitationInTheCallingSession(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it, questiond bridge, an MCP server and the OpenCode TUI")
	o := startOverlay(t)
	tool := o.key + "_" + opencodeserve.ReleaseTool

	o.oc.PromptIn(o.session, "Release v2.3, please.")
	o.u.waitFor("bridged-question", "Release v2.3?", "Production", panelHint)
	o.d.waitPending(o.session, 1)
	answerRelease(o.u, o.oc, o.session, tool)
	expectReleased(t, o.oc.ToolEnded(o.session, tool))
	o.u.waitGone("answered", panelHint)
	o.noneLeft(t)
}

// Esc in the TUI rejects whichever question it shows: OpenCode's own
// question tool ends dismissed; an agent's question gives the agent
// cancel; a bridged MCP server's elicitation gives its tool cancel.
func TestOverlayEscRejectsEitherKind(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it, questiond bridge, an MCP server and the OpenCode TUI")
	o := startOverlay(t)

	o.oc.PromptIn(o.session, opencodeserve.AskPrompt)
	o.regionPanel("opencode-question")
	o.u.keys("Escape")
	if call := o.oc.CallEnded(o.session, opencodeserve.QuestionTool); !opencodeserve.Dismissed(call) {
		t.Fatalf("OpenCode's history holds its question tool's call %v; want it dismissed", call)
	}
	o.u.waitGone("opencode-dismissed", panelHint)

	answer := o.d.elicitAs(t.Context(), overlayToken, booleanQuestion(o.session, "Before the release.", "Rotate the keys?"))
	o.d.waitPending(o.session, 1)
	o.u.waitFor("agent-question", "Rotate the keys?", panelHint)
	stillWaiting(t, answer)
	o.u.keys("Escape")
	if got := await(t, answer, answerWithin); got.Action != "cancel" || got.Content != nil {
		t.Fatalf("the agent got %s %v, want cancel without content", got.Action, got.Content)
	}
	o.u.waitGone("agent-dismissed", panelHint)

	tool := o.key + "_" + opencodeserve.ReleaseTool
	o.oc.PromptIn(o.session, "Release v2.3, please.")
	o.u.waitFor("bridged-question", "Release v2.3?", "Production", panelHint)
	o.u.keys("Escape")
	if call := o.oc.ToolEnded(o.session, tool); call.Status != "completed" || !strings.Contains(call.Output, "not released: cancel") {
		t.Fatalf("OpenCode's history holds the bridged call %v; want the tool's own result for cancel", call)
	}
	o.u.waitGone("bridged-dismissed", panelHint)
	o.noneLeft(t)
}
