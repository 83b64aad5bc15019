package opencodeserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/fakellm"
	"github.com/questiond/questiond/internal/opencodenpm"
	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// TurnTimeout bounds one wait on OpenCode: its start, its MCP server
// connecting, a model turn with a tool call (seconds on an idle machine,
// many more on one shared with other work).
const TurnTimeout = 90 * time.Second

// Answer is the fake model's text in the turn after the tool's result.
const Answer = "The release is done."

// Binary is the pinned OpenCode, installed from npm into the user's cache
// on first use; without npm the test is missing a dependency (a failure
// under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := opencodenpm.Install(opencodenpm.Pinned, t.Logf)
	if err != nil {
		if _, lookErr := exec.LookPath("npm"); lookErr != nil {
			testenv.Missing(t, "npm (to install opencode-ai@"+opencodenpm.Pinned+")", "install Node.js 20 and npm")
		}
		t.Fatal(err)
	}
	return bin
}

// Server is a running `opencode serve` and the fake model it talks to.
type Server struct {
	t    testing.TB
	URL  string
	llm  *fakellm.Server
	key  string
	bin  string
	dir  string   // the project, OpenCode's working directory
	env  []string // the offline environment: its data directory, where sessions live, too
	proc *launch.Process
}

// Start runs bin (OpenCode) as `opencode serve` offline on loopback in a
// project (a git repository) of its own whose opencode.json has mcpSection
// as its "mcp" section and the fake model as its only model; that model
// calls the tool ReleaseTool of the MCP server named key (OpenCode names
// it key_release) with version v2.3 on the user's prompt (OpenCode's own
// question tool instead when the prompt holds AskPrompt) and answers the
// turn after with Answer. It returns once that MCP server is connected (at
// once with key ""); OpenCode is stopped when the test ends.
func Start(t testing.TB, bin, key string, mcpSection map[string]any) *Server {
	t.Helper()
	llm, err := fakellm.Start(script(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(llm.Close)
	root := t.TempDir()
	env, err := opencodenpm.OfflineEnv(root)
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(root, "project")
	config := map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"model": "fake/" + fakellm.ModelID, "small_model": "fake/" + fakellm.ModelID, "enabled_providers": []string{"fake"},
		"provider": map[string]any{"fake": llm.Config()},
		"mcp":      mcpSection,
	}
	data, _ := json.MarshalIndent(config, "", "  ")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "opencode.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A git repository, as OpenCode's projects usually are: without one its
	// first turn takes seconds longer.
	if git, err := exec.LookPath("git"); err == nil {
		_ = exec.Command(git, "-C", project, "init", "-q").Run()
	}
	oc := &Server{t: t, llm: llm, key: key, bin: bin, dir: project, env: env}
	// A port of its own: with --port 0 OpenCode takes 4096 whenever it is
	// free, so two servers started one after the other share an address,
	// and a client's kept-alive connection to the first meets the second.
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	oc.launch(strconv.Itoa(port))
	t.Cleanup(func() {
		// SIGTERM first, so that OpenCode closes its MCP servers' stdin;
		// it then ends by the signal, which Stop reports as an error.
		_ = oc.proc.Stop()
		if t.Failed() {
			t.Logf("opencode.json:\n%s\nopencode's output:\n%s", data, oc.proc.Output())
			logTails(t, filepath.Join(root, "data"))
		}
	})
	oc.connected()
	return oc
}

// launch starts `opencode serve` on port.
func (oc *Server) launch(port string) {
	oc.t.Helper()
	p, err := oc.tryLaunch(port)
	if err != nil {
		oc.t.Fatal(err)
	}
	oc.proc, oc.URL = p, p.URL
}

func (oc *Server) tryLaunch(port string) (*launch.Process, error) {
	oc.t.Helper()
	cmd := exec.Command(oc.bin, "serve", "--port", port, "--hostname", "127.0.0.1")
	cmd.Dir, cmd.Env = oc.dir, oc.env
	listening := regexp.MustCompile(`opencode server listening on http://(\S+)`)
	return testkit.TryLaunch(oc.t, cmd, launch.Options{Name: "opencode", StartTimeout: TurnTimeout, StopTimeout: 15 * time.Second,
		AddrIn: func(line string) string {
			if m := listening.FindStringSubmatch(line); m != nil {
				return m[1]
			}
			return ""
		}})
}

// connected waits until OpenCode's MCP server key is connected (at once
// without one).
func (oc *Server) connected() {
	oc.t.Helper()
	if oc.key == "" {
		return
	}
	testkit.Eventually(oc.t, TurnTimeout, "OpenCode's MCP server "+oc.key+" connected", func() bool {
		var status map[string]struct{ Status, Error string }
		oc.get("/mcp", &status)
		if s := status[oc.key]; s.Status == "failed" {
			oc.t.Fatalf("OpenCode could not start the MCP server %s: %s", oc.key, s.Error)
		}
		return status[oc.key].Status == "connected"
	})
}

// Restart kills OpenCode (SIGKILL, as a crash) and starts it again on the
// same address, in the same project and data directory: its sessions and
// their history are still there, what was in flight (a pending question,
// a running turn) is not. It returns once OpenCode answers again and its
// MCP server is connected. (OpenCode 1.18.33 never answers a request
// that reaches it in the moment before it is ready, /global/health
// included.)
func (oc *Server) Restart() {
	oc.t.Helper()
	_, port, err := net.SplitHostPort(oc.proc.Addr)
	if err != nil {
		oc.t.Fatal(err)
	}
	oc.proc.Kill()
	// OpenCode started again right after the kill was seen to exit at
	// once now and then (status 1): it is tried again, on the same port.
	deadline := time.Now().Add(TurnTimeout)
	for {
		p, err := oc.tryLaunch(port)
		if err == nil {
			oc.proc, oc.URL = p, p.URL
			break
		}
		if time.Now().After(deadline) {
			oc.t.Fatalf("OpenCode did not start again on port %s: %v", port, err)
		}
		oc.t.Logf("OpenCode did not start again on port %s, trying again: %v", port, err)
		time.Sleep(500 * time.Millisecond)
	}
	if oc.URL != "http://127.0.0.1:"+port {
		oc.t.Fatalf("OpenCode restarted at %s, not on port %s", oc.URL, port)
	}
	oc.connected()
}

// logTails logs the end of each log file under dir: OpenCode's own logs,
// which hold its MCP servers' stderr too.
func logTails(t testing.TB, dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log") {
			data, _ := os.ReadFile(path)
			t.Logf("%s ends with:\n%s", path, data[max(0, len(data)-8000):])
		}
		return nil
	})
}

// get decodes the JSON answer to GET path on OpenCode into out.
func (oc *Server) get(path string, out any) {
	oc.t.Helper()
	status, body := testkit.SendJSON(oc.t, http.MethodGet, oc.URL+path, "")
	if status != http.StatusOK || json.Unmarshal([]byte(body), out) != nil {
		oc.t.Fatalf("GET %s: %d %.500s", path, status, body)
	}
}

// Prompt opens a session, prompts it once and returns its id; the fake
// model then calls the release tool.
func (oc *Server) Prompt(text string) string {
	oc.t.Helper()
	session := oc.Session("release")
	oc.PromptIn(session, text)
	return session
}

// Session opens a root session titled title and returns its id.
func (oc *Server) Session(title string) string {
	oc.t.Helper()
	data, _ := json.Marshal(map[string]string{"title": title})
	status, body := testkit.SendJSON(oc.t, http.MethodPost, oc.URL+"/session", string(data))
	var session struct{ ID string }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &session) != nil || session.ID == "" {
		oc.t.Fatalf("POST /session: %d %.500s", status, body)
	}
	return session.ID
}

// PromptIn prompts session with text once it is idle, without waiting
// for the turn; the fake model then calls the release tool, or OpenCode's
// question tool when text holds AskPrompt. (OpenCode 1.18.33 was seen to
// accept a prompt to a session still busy ending its last turn and never
// run it.)
func (oc *Server) PromptIn(session, text string) {
	oc.t.Helper()
	oc.Idle(session)
	prompt, _ := json.Marshal(map[string]any{
		"parts": []map[string]string{{"type": "text", "text": text}},
		"model": map[string]string{"providerID": "fake", "modelID": fakellm.ModelID},
	})
	res, err := http.Post(oc.URL+"/session/"+session+"/prompt_async", "application/json", bytes.NewReader(prompt))
	if err != nil {
		oc.t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusNoContent {
		oc.t.Fatalf("POST prompt_async: %d %.500s", res.StatusCode, got)
	}
}

// Idle waits until OpenCode reports session idle (GET /session/status
// lists only sessions that are not).
func (oc *Server) Idle(session string) {
	oc.t.Helper()
	testkit.Eventually(oc.t, TurnTimeout, "session "+session+" idle", func() bool {
		var status map[string]struct{ Type string }
		oc.get("/session/status", &status)
		s, listed := status[session]
		return !listed || s.Type == "idle"
	})
}

// ToolState is a tool part's state in OpenCode's session history.
type ToolState struct {
	Status string          `json:"status"`
	Input  json.RawMessage `json:"input"`
	Output string          `json:"output"`
	Error  string          `json:"error"`
}

func (s ToolState) String() string {
	return fmt.Sprintf("%s call %s: %s%s", s.Status, s.Input, s.Output, s.Error)
}

// Message is one message of OpenCode's session history
// (GET /session/{id}/message).
type Message struct {
	Info struct {
		Role string `json:"role"`
	} `json:"info"`
	Parts []struct {
		Type  string    `json:"type"`
		Tool  string    `json:"tool"`
		Text  string    `json:"text"`
		State ToolState `json:"state"`
	} `json:"parts"`
}

// History is session's history as OpenCode serves it.
func (oc *Server) History(session string) []Message {
	oc.t.Helper()
	var history []Message
	oc.get("/session/"+session+"/message", &history)
	return history
}

// ended is the state of the last call of tool in history that has ended
// (completed or error), or nil.
func ended(history []Message, tool string) *ToolState {
	var state *ToolState
	for _, m := range history {
		for _, p := range m.Parts {
			if p.Type == "tool" && p.Tool == tool && (p.State.Status == "completed" || p.State.Status == "error") {
				state = &p.State
			}
		}
	}
	return state
}

// ToolEnded waits until session's history holds a call of tool that has
// ended and the model's turn after it, and returns the call's state.
func (oc *Server) ToolEnded(session, tool string) ToolState {
	oc.t.Helper()
	return oc.waitEnded(session, tool, true)
}

// CallEnded waits until session's history holds a call of tool that has
// ended, completed or not, and returns its state; unlike ToolEnded it
// waits for no turn after it (a dismissed question ends the turn).
func (oc *Server) CallEnded(session, tool string) ToolState {
	oc.t.Helper()
	return oc.waitEnded(session, tool, false)
}

func (oc *Server) waitEnded(session, tool string, turnAfter bool) ToolState {
	oc.t.Helper()
	deadline := time.Now().Add(TurnTimeout)
	for {
		history := oc.History(session)
		call := ended(history, tool)
		if call != nil && (!turnAfter || len(history) > 0 && history[len(history)-1].Info.Role == "assistant" &&
			hasText(history[len(history)-1], Answer)) {
			return *call
		}
		if time.Now().After(deadline) {
			data, _ := json.MarshalIndent(history, "", " ")
			oc.t.Fatalf("no ended call of %s in session %s within %v; its history:\n%s", tool, session, TurnTimeout, data)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ToolEndedEarly fails the test at once when session's history already
// holds an ended call of tool: a wait for the tool's question ends with
// it.
func (oc *Server) ToolEndedEarly(session, tool string) {
	oc.t.Helper()
	if call := ended(oc.History(session), tool); call != nil {
		oc.t.Fatalf("the call of %s ended before the operator's answer: %v", tool, call)
	}
}

func hasText(m Message, text string) bool {
	for _, p := range m.Parts {
		if p.Type == "text" && strings.Contains(p.Text, text) {
			return true
		}
	}
	return false
}

// ToolResultSent reports whether OpenCode sent its model a tool result
// holding text.
func (oc *Server) ToolResultSent(text string) bool {
	for _, r := range oc.llm.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && strings.Contains(string(m.Content), text) {
				return true
			}
		}
	}
	return false
}

// Asked waits for the question the upstream's tool asks in session through
// the bridge, as an operator lists it (GET /question, questiond's only
// one), failing at once if OpenCode's call of tool ends first.
func (oc *Server) Asked(ops *testkit.Operator, session, tool string) testkit.Question {
	oc.t.Helper()
	var asked []testkit.Question
	testkit.Eventually(oc.t, TurnTimeout, "the upstream's question in GET /question", func() bool {
		oc.ToolEndedEarly(session, tool)
		asked = ops.Pending("")
		return len(asked) > 0
	})
	if len(asked) != 1 {
		oc.t.Fatalf("operators see %d questions, want one: %+v", len(asked), asked)
	}
	return asked[0]
}
