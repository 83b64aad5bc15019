package opencode

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
	"github.com/questiond/questiond/internal/testserver"
)

// inFrontOf runs questiond --upstream in front of OpenCode, whose MCP
// server key runs through `questiond bridge` asking that questiond: the
// bridge's questiond address is known before either starts (questiond's
// listener is opened first).
func inFrontOf(t *testing.T) (*testserver.Server, *opencodeserve.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	key, section := bridged(t, testkit.Binary(t), opencodeserve.Upstream(), "http://"+ln.Addr().String(), agentToken)
	oc := opencodeserve.Start(t, opencodeserve.Binary(t), key, section)
	srv := testkit.Serve(t, testserver.Config{
		Listener: ln,
		Upstream: daemon.UpstreamOptions{URL: oc.URL},
		Events:   sse.Options{Heartbeat: time.Hour},
		Logger:   zaptest.NewLogger(t),
		API:      daemon.APIOptions{Auth: daemon.APIAuth{AgentTokens: map[string]string{"opencode": agentToken}}},
	})
	return srv, oc, key
}

// questiond in front of the real OpenCode: OpenCode's routes answer
// through it as they do directly, its event stream starts with OpenCode's
// own server.connected, a question an agent asks in an OpenCode session is
// filed there with the session's directory, and an elicitation a bridged
// MCP server makes during OpenCode's tool call is filed in the session
// whose call waits, linked to that call; answered through questiond, the
// call completes with the typed answer.
func TestQuestiondInFrontOfOpencode(t *testing.T) {
	testenv.Heavy(t, "runs the real OpenCode, questiond bridge and an MCP server as processes")
	srv, oc, key := inFrontOf(t)

	direct := getJSON[map[string]any](t, oc.URL+"/config/providers")
	through := getJSON[map[string]any](t, srv.URL+"/config/providers")
	if len(direct) == 0 || !jsonEqual(direct, through) {
		t.Errorf("GET /config/providers through questiond differs from OpenCode's own")
	}

	stream := openStream(t, srv.URL+"/global/event")
	first := testkit.Next(t, stream, opencodeserve.TurnTimeout, "a first frame", func(globalFrame) bool { return true })
	if first.Payload.Type != "server.connected" {
		t.Fatalf("the first frame through questiond is %+v, want OpenCode's server.connected", first)
	}

	session := oc.Prompt("Release v2.3, please.")
	info := getJSON[map[string]any](t, oc.URL+"/session/"+session)
	var q struct {
		ID, SessionID string
		Tool          *struct{ MessageID, CallID string }
	}
	testkit.Eventually(t, opencodeserve.TurnTimeout, "the bridged question in GET /question through questiond", func() bool {
		oc.ToolEndedEarly(session, key+"_release")
		for _, listed := range getJSON[[]json.RawMessage](t, srv.URL+"/question") {
			_ = json.Unmarshal(listed, &q)
			if strings.HasPrefix(q.ID, "que_") {
				return true
			}
		}
		return false
	})
	if q.SessionID != session || q.Tool == nil || !strings.HasPrefix(q.Tool.MessageID, "msg_") || q.Tool.CallID == "" {
		t.Fatalf("the bridged question is filed as %+v; want OpenCode's session %s, linked to its tool call", q, session)
	}
	asked := until(t, stream, "question.asked")
	if !strings.Contains(string(asked.Payload.Properties), q.ID) {
		t.Fatalf("the merged stream announced %s, want %s", asked.Payload.Properties, q.ID)
	}
	reply := `{"answers":[["Production"],["3"],["Yes"],[]]}`
	if status, body := testkit.SendJSON(t, http.MethodPost, srv.URL+"/question/"+q.ID+"/reply", reply); status != http.StatusOK {
		t.Fatalf("reply through questiond: %d %s", status, body)
	}
	call := oc.ToolEnded(session, key+"_release")
	if call.Status != "completed" || !strings.Contains(call.Output, wantResult) {
		t.Fatalf("OpenCode's history holds the call %v; want it completed with %q", call, wantResult)
	}

	// An agent asks in the same OpenCode session by its id.
	form := `{"message":"Ship it?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}},"sessionID":"` + session + `"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/elicitations", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agentToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var e struct{ SessionID, Directory string }
	raw, _ := io.ReadAll(res.Body)
	status, body := res.StatusCode, string(raw)
	if status != http.StatusCreated || json.Unmarshal(raw, &e) != nil || e.SessionID != session || e.Directory != info["directory"] {
		t.Fatalf("an agent's question in OpenCode's session: %d %s; want it filed there, directory %v", status, body, info["directory"])
	}
}

func getJSON[T any](t *testing.T, url string) T {
	t.Helper()
	var out T
	status, body := testkit.SendJSON(t, http.MethodGet, url, "")
	if status != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("GET %s: %d %.300s", url, status, body)
	}
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// globalFrame is one /global/event frame.
type globalFrame struct {
	Directory string `json:"directory"`
	Payload   struct {
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
	} `json:"payload"`
}

// openStream reads url's /global/event frames until the test ends.
func openStream(t *testing.T, url string) <-chan globalFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET %s: %v %v", url, res, err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	return testkit.Events[globalFrame](res.Body, 1024)
}

// until returns the next frame of type typ.
func until(t *testing.T, frames <-chan globalFrame, typ string) globalFrame {
	t.Helper()
	return testkit.Next(t, frames, opencodeserve.TurnTimeout, typ, func(g globalFrame) bool { return g.Payload.Type == typ })
}
