package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
)

// MCP 2026-07-28 (SEP-2575): no initialize, no session; every request
// carries its protocol version in the MCP-Protocol-Version header and in
// _meta, with its client's capabilities (docs/mcp.md, "Stateless requests").

const protocol2026 = "2026-07-28"

// statelessMeta is the _meta of a 2026-07-28 request: its version and its
// client's capabilities (the SDK requires both), plus extra members.
func statelessMeta(version string, extra string) string {
	meta := `"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw-stateless","version":"1"}`
	if extra != "" {
		meta += "," + extra
	}
	return "{" + meta + "}"
}

// statelessPost sends one 2026-07-28 request with the headers SEP-2243 asks
// for (method, and name for a tools/call) unless headers override them.
func statelessPost(ctx context.Context, t *testing.T, h *harness, path, body string, headers ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", mcpAccept)
	req.Header.Set("MCP-Protocol-Version", protocol2026)
	var msg struct {
		Method string
		Params struct{ Name string }
	}
	if json.Unmarshal([]byte(body), &msg) == nil {
		req.Header.Set("Mcp-Method", msg.Method)
		if msg.Params.Name != "" {
			req.Header.Set("Mcp-Name", msg.Params.Name)
		}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// rpcError is a JSON-RPC error response, read from an application/json
// body or an event stream's first message.
type rpcError struct {
	ID    any `json:"id"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func firstMessage(t *testing.T, res *http.Response) []byte {
	t.Helper()
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(nil, 1<<20)
	var all []string
	for lines.Scan() {
		line := lines.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return []byte(data)
		}
		all = append(all, line)
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		return []byte(strings.Join(all, "\n"))
	}
	t.Fatalf("%d %s: no message in %q", res.StatusCode, res.Header.Get("Content-Type"), all)
	return nil
}

func statelessClient(t *testing.T, h *harness, path string, headers map[string]string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "stateless-agent", Version: "1"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: h.URL + path, HTTPClient: &http.Client{Transport: headerTransport(headers)}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, nil) // go-sdk's default: 2026-07-28
	if err != nil {
		t.Fatalf("connecting to %s: %v", path, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != protocol2026 {
		t.Fatalf("negotiated %s, want %s", v, protocol2026)
	}
	if cs.ID() != "" {
		t.Fatalf("a stateless client holds MCP session %q", cs.ID())
	}
	return cs
}

// A go-sdk client on 2026-07-28 discovers questiond's server (no
// initialize), calls the question tool in one POST, hears progress while it
// waits, and gets the operator's answer; its question is filed in the
// session its URL names, and nothing counts as a live MCP session.
func TestMCPStatelessAskRoundTrip(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before, pgtest.LeakOption()) })
	h := newHarness(t, httpapi.Options{KeepAlive: 20 * time.Millisecond, Limits: httpapi.Limits{MaxMCPSessions: 1}})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	var progress atomic.Int64
	cs := statelessClient(t, h, "/mcp?session=ses_stateless", nil, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	if got := toolNames(t, cs); !slices.Equal(got, []string{"ask_user_question"}) {
		t.Fatalf("tools %v", got)
	}
	// A second stateless client: --max-mcp-sessions (1) bounds sessions,
	// and stateless requests hold none.
	other := statelessClient(t, h, "/mcp?session=ses_stateless", nil, nil)
	if got := toolNames(t, other); len(got) != 1 {
		t.Fatalf("tools of the second client %v", got)
	}
	done := make(chan toolCall, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "ask_user_question", Meta: mcp.Meta{"progressToken": "p1"}, Arguments: twoPrompts(),
		})
		done <- toolCall{res, err}
	}()
	id, sessionID := askedProps(t, events.expect(t, "question.asked"))
	if sessionID != "ses_stateless" {
		t.Errorf("asked in %s, want ses_stateless", sessionID)
	}
	listed := waitListed(t, h)
	if client, _ := listed["client"].(string); client != "" && client != "stateless-agent" {
		t.Errorf("the question names client %q", client)
	}
	for deadline := time.Now().Add(5 * time.Second); progress.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if progress.Load() < 2 {
		t.Errorf("%d progress notifications while waiting, want at least 2", progress.Load())
	}
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"SQLite"}, {"soon"}}}); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	wantToolResult(t, "stateless call", ended(t, done), `{"action":"accept","answers":[["SQLite"],["soon"]]}`,
		`User has answered your questions: "Which database?"="SQLite", "Anything else?"="soon". You can now continue with the user's answers in mind.`)
	wantEndedEvent(t, events, "question.replied", id)
}

// A stateless request that names no session asks in its agent's inbox, the
// session its HTTP questions without one go to (a stateful MCP session gets
// one of its own instead).
func TestMCPStatelessWithoutASessionAsksInTheInbox(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	inbox := h.create(seedForm()).SessionID
	cs := statelessClient(t, h, "/mcp", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := callAsync(ctx, cs, "ask_user_question", twoPrompts())
	var sessions []string
	for deadline := time.Now().Add(10 * time.Second); len(sessions) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var list []struct{ SessionID string }
		h.do(http.MethodGet, "/question", nil).json(t, &list)
		sessions = sessions[:0]
		for _, q := range list {
			sessions = append(sessions, q.SessionID)
		}
	}
	if !slices.Equal(sessions, []string{inbox, inbox}) {
		t.Errorf("sessions %q, want the inbox %s twice", sessions, inbox)
	}
	cancel()
	ended(t, done)
}

// Without a progress token a stateless call may not be pinged (a server
// sends a stateless client no requests): an SSE comment keeps its stream
// alive instead, and the answer still arrives on it.
func TestMCPStatelessCallIsKeptAliveWithComments(t *testing.T) {
	h := newHarness(t, httpapi.Options{KeepAlive: 20 * time.Millisecond})
	res := statelessPost(context.Background(), t, h, "/mcp?session=ses_raw",
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":`+statelessMeta(protocol2026, "")+
			`,"name":"ask_user_question","arguments":{"questions":[{"question":"Go on?","options":[{"label":"Yes"},{"label":"No"}]}]}}}`)
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("tools/call answered %d %s", res.StatusCode, ct)
	}
	if id := res.Header.Get("Mcp-Session-Id"); id != "" {
		t.Errorf("a stateless answer names MCP session %q", id)
	}
	lines := bufio.NewScanner(res.Body)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("the stream ended: %v", lines.Err())
		}
		return lines.Text()
	}
	if line := next(); line != ": waiting for an answer" {
		t.Fatalf("first line of the call's stream %q, want a comment", line)
	}
	id := waitListed(t, h)["id"].(string)
	h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"Yes"}}})
	for {
		line := next()
		if strings.Contains(line, `"method":"ping"`) {
			t.Fatalf("a stateless call was pinged: %s", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue // comments, blank lines, event names
		}
		if !strings.Contains(data, `"id":7`) || !strings.Contains(data, `"structuredContent":{"action":"accept","answers":[["Yes"]]}`) {
			t.Fatalf("the call's result: %s", data)
		}
		return
	}
}

// A stateless call is its POST: a client that hangs up withdraws its
// question, and operators hear so.
func TestMCPStatelessHangUpWithdraws(t *testing.T) {
	h := newHarness(t, httpapi.Options{KeepAlive: 20 * time.Millisecond})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	ctx, cancel := context.WithCancel(context.Background())
	res := statelessPost(ctx, t, h, "/mcp?session=ses_gone",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":`+statelessMeta(protocol2026, "")+
			`,"name":"ask_user_question","arguments":{"questions":[{"question":"Go on?"}]}}}`)
	id, _ := askedProps(t, events.expect(t, "question.asked"))
	cancel()
	res.Body.Close()
	wantEndedEvent(t, events, "question.rejected", id)
	wantNothingPending(t, h)
}

// server/discover answers without initialize: the versions questiond
// speaks, its capabilities and the instructions of the session's tool.
func TestMCPStatelessDiscover(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	res := statelessPost(context.Background(), t, h, "/mcp?session=ses_d",
		`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":`+statelessMeta(protocol2026, "")+`}}`)
	var got struct {
		ID     string `json:"id"`
		Result struct {
			SupportedVersions []string       `json:"supportedVersions"`
			Capabilities      map[string]any `json:"capabilities"`
			Instructions      string         `json:"instructions"`
			Meta              map[string]any `json:"_meta"`
		} `json:"result"`
	}
	body := firstMessage(t, res)
	if err := json.Unmarshal(body, &got); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("server/discover: %d %s", res.StatusCode, body)
	}
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		if !slices.Contains(got.Result.SupportedVersions, v) {
			t.Errorf("supportedVersions %v lack %s", got.Result.SupportedVersions, v)
		}
	}
	if got.ID != "d" || got.Result.Capabilities["tools"] == nil || !strings.Contains(got.Result.Instructions, "ask_user_question") {
		t.Errorf("server/discover: %s", body)
	}
}

// A protocol version questiond does not know is refused with
// UnsupportedProtocolVersionError (-32022) listing the versions it speaks.
func TestMCPStatelessUnsupportedVersion(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	res := statelessPost(context.Background(), t, h, "/mcp",
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":`+statelessMeta("2099-01-01", "")+`}}`,
		"MCP-Protocol-Version", "2099-01-01")
	body := firstMessage(t, res)
	var got rpcError
	if err := json.Unmarshal(body, &got); err != nil || got.Error == nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown version: %d %s", res.StatusCode, body)
	}
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	_ = json.Unmarshal(got.Error.Data, &data)
	if got.Error.Code != -32022 || data.Requested != "2099-01-01" ||
		!slices.Contains(data.Supported, protocol2026) || !slices.Contains(data.Supported, "2025-11-25") {
		t.Errorf("an unknown version: %d %s", res.StatusCode, body)
	}
}

// SEP-2243: a 2026-07-28 request names its method (Mcp-Method) and, for a
// tool call, its tool (Mcp-Name) in headers that match the body, so that
// gateways can route on them; a mismatch is refused (-32020, HTTP 400) and
// nothing is asked.
func TestMCPStatelessHeadersMustMatchTheBody(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":` + statelessMeta(protocol2026, "") +
		`,"name":"ask_user_question","arguments":{"questions":[{"question":"Go on?"}]}}}`
	for name, headers := range map[string][]string{
		"another tool":           {"Mcp-Name", "delete_everything"},
		"no tool":                {"Mcp-Name", ""},
		"another method":         {"Mcp-Method", "tools/list"},
		"no method":              {"Mcp-Method", ""},
		"another header version": {"MCP-Protocol-Version", "2099-01-01"},
	} {
		res := statelessPost(context.Background(), t, h, "/mcp?session=ses_hdr", call, headers...)
		body := firstMessage(t, res)
		var got rpcError
		if err := json.Unmarshal(body, &got); err != nil || got.Error == nil || res.StatusCode != http.StatusBadRequest ||
			got.Error.Code != -32020 || got.ID != float64(5) {
			t.Errorf("%s: %d %s, want 400 with error -32020 for id 5", name, res.StatusCode, body)
		}
	}
	wantNothingPending(t, h)
}

// A request with the 2026-07-28 _meta but no MCP-Protocol-Version header is
// told the header is missing, not served as a legacy request.
func TestMCPStatelessMetaWithoutHeader(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	res := statelessPost(context.Background(), t, h, "/mcp",
		`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":`+statelessMeta(protocol2026, "")+`}}`,
		"MCP-Protocol-Version", "")
	body := firstMessage(t, res)
	var got rpcError
	if err := json.Unmarshal(body, &got); err != nil || got.Error == nil || res.StatusCode != http.StatusBadRequest || got.Error.Code != -32020 {
		t.Errorf("no header: %d %s, want 400 with error -32020", res.StatusCode, body)
	}
}

// There is no stream or session to open or end on 2026-07-28: GET and
// DELETE are 405 naming POST.
func TestMCPStatelessGetAndDeleteAreNotAllowed(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		res := h.do(method, "/mcp", nil, "Accept", mcpAccept, "MCP-Protocol-Version", protocol2026)
		var named struct{ Name string }
		res.json(t, &named)
		if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" || named.Name != "MethodNotAllowed" {
			t.Errorf("%s: %d Allow %q %s", method, res.Status, res.Header.Get("Allow"), res.Body)
		}
	}
}

// Stateless requests pass the same guards as every other: without the
// agent's token, 401; another agent's session, 403 for the tool call.
func TestMCPStatelessRequestsAreAuthenticated(t *testing.T) {
	h := newHarnessWith(t, tuning{api: httpapi.Options{Auth: authBoth()}}, zaptest.NewLogger(t))
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + statelessMeta(protocol2026, "") + `}}`
	res := statelessPost(context.Background(), t, h, "/mcp", list)
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", res.StatusCode)
	}
	res = statelessPost(context.Background(), t, h, "/mcp", list, "Authorization", bearerAuth(alphaToken))
	if body := firstMessage(t, res); res.StatusCode != http.StatusOK || !strings.Contains(string(body), "ask_user_question") {
		t.Errorf("with alpha's token: %d %s", res.StatusCode, body)
	}
}

// Statelessly, methods of capabilities questiond does not declare (prompts,
// resources, completion) are unknown: 404 with -32601 and the request's id,
// as 2026-07-28 has it, and so are the methods it removed.
func TestMCPStatelessUndeclaredMethodsAreNotFound(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	for i, method := range []string{"prompts/list", "resources/list", "resources/templates/list", "completion/complete", "initialize", "ping", "logging/setLevel", "no/such"} {
		res := statelessPost(context.Background(), t, h, "/mcp",
			`{"jsonrpc":"2.0","id":`+string(rune('1'+i))+`,"method":"`+method+`","params":{"_meta":`+statelessMeta(protocol2026, "")+`}}`)
		body := firstMessage(t, res)
		var got rpcError
		if err := json.Unmarshal(body, &got); err != nil || got.Error == nil || res.StatusCode != http.StatusNotFound ||
			got.Error.Code != -32601 || got.ID != float64(i+1) {
			t.Errorf("%s: %d %s, want 404 with -32601 for id %d", method, res.StatusCode, body, i+1)
		}
	}
}

// A shutdown lets a waiting stateless call go as it does a session's: its
// question ends by the shutdown before Release returns, the call hears an
// error, and later stateless requests get a JSON 503.
func TestMCPStatelessReleaseWithdrawsWaitingCalls(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	cs := statelessClient(t, h, "/mcp?session=ses_waiting", nil, nil)
	done := callAsync(context.Background(), cs, "ask_user_question", twoPrompts())
	id, _ := askedProps(t, events.expect(t, "question.asked"))
	if err := h.api.Questions().Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if q, err := h.store.Get(context.Background(), id); err != nil || q.Ended == nil || q.Ended.Ending != pending.EndShutdown {
		t.Fatalf("when Release returned the call's question was %+v %v, want ended by the shutdown", q, err)
	}
	if got := ended(t, done); got.err == nil && !got.res.IsError {
		t.Errorf("a call let go by Release returned %+v", got.res)
	}
	wantEndedEvent(t, events, "question.rejected", id)
	res := statelessPost(context.Background(), t, h, "/mcp",
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":`+statelessMeta(protocol2026, "")+`}}`)
	defer res.Body.Close()
	var named struct{ Name string }
	if err := json.NewDecoder(res.Body).Decode(&named); err != nil || res.StatusCode != http.StatusServiceUnavailable || named.Name != "ServiceUnavailable" {
		t.Errorf("a stateless request after Release: %d %+v %v", res.StatusCode, named, err)
	}
}
