package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// mcpConnect opens an MCP session on h's /mcp, at path (which may carry
// ?session=), with extra headers.
func mcpConnect(t *testing.T, h *harness, path string, headers map[string]string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "questiond-test", Version: "1"}, opts)
	transport := &mcp.StreamableClientTransport{Endpoint: h.URL + path, HTTPClient: &http.Client{Transport: headerTransport(headers)}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A stateful MCP session: go-sdk's default, 2026-07-28, is stateless
	// (mcp_stateless_test.go).
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to %s: %v", path, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := []string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func putSession(t *testing.T, h *harness, id string, body any) response {
	t.Helper()
	return h.do(http.MethodPut, "/sessions/"+id, body)
}

// waitListed polls GET /question until exactly one question is pending.
func waitListed(t *testing.T, h *harness) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var list []map[string]any
		h.do(http.MethodGet, "/question", nil).json(t, &list)
		if len(list) == 1 {
			return list[0]
		}
		if len(list) > 1 {
			t.Fatalf("%d questions pending, want 1", len(list))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no question was listed")
	return nil
}

func TestMCPToolPerCapability(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_user", map[string]any{"questionCapability": "user"})
	putSession(t, h, "ses_child", map[string]any{"questionCapability": "parent", "parentSessionID": "ses_root"})
	putSession(t, h, "ses_quiet", map[string]any{"questionCapability": "none"})
	for _, tc := range []struct {
		path    string
		headers map[string]string
		want    []string
	}{
		{"/mcp?session=ses_user", nil, []string{"ask_user_question"}},
		{"/mcp", map[string]string{"X-Questiond-Session": "ses_user"}, []string{"ask_user_question"}},
		{"/mcp?session=ses_child", nil, []string{"ask_parent_question"}},
		{"/mcp?session=ses_quiet", nil, []string{}},
		{"/mcp?session=ses_unknown", nil, []string{"ask_user_question"}}, // the default
		{"/mcp", nil, []string{"ask_user_question"}},
	} {
		cs := mcpConnect(t, h, tc.path, tc.headers, nil)
		if got := toolNames(t, cs); !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: tools %v, want %v", tc.path, tc.headers, got, tc.want)
		}
	}
}

func TestMCPAskUserRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{KeepAlive: 50 * time.Millisecond})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	var progress atomic.Int64
	cs := mcpConnect(t, h, "/mcp?session=ses_alpha", nil, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	type callResult struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "ask_user_question",
			Meta: mcp.Meta{"progressToken": "p1"},
			Arguments: map[string]any{"questions": []any{
				map[string]any{"question": "Which database?", "header": "Database", "options": []any{
					map[string]any{"label": "Postgres", "description": "Relational"},
					map[string]any{"label": "SQLite", "description": "Embedded"},
				}},
				map[string]any{"question": "Which features?", "header": "Features", "multiple": true, "options": []any{
					map[string]any{"label": "Auth", "description": "Login"},
					map[string]any{"label": "Billing", "description": "Payments"},
				}},
				map[string]any{"question": "Anything else?", "header": "Notes"},
			}},
		})
		done <- callResult{res, err}
	}()
	asked := events.expect(t, "question.asked")
	var props struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
		Questions []struct {
			Question string `json:"question"`
			Header   string `json:"header"`
			Options  []struct {
				Label       string `json:"label"`
				Description string `json:"description"`
			} `json:"options"`
			Multiple bool `json:"multiple"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(asked.Properties, &props); err != nil {
		t.Fatal(err)
	}
	if props.SessionID != "ses_alpha" || len(props.Questions) != 3 {
		t.Fatalf("asked %+v", props)
	}
	q0, q1, q2 := props.Questions[0], props.Questions[1], props.Questions[2]
	if q0.Question != "Which database?" || q0.Header != "Database" || len(q0.Options) != 2 ||
		q0.Options[1].Label != "SQLite" || q0.Options[1].Description != "Embedded" || q0.Multiple {
		t.Errorf("question 0 = %+v", q0)
	}
	if !q1.Multiple || q1.Options[0].Description != "Login" {
		t.Errorf("question 1 = %+v", q1)
	}
	if q2.Question != "Anything else?" || len(q2.Options) != 0 {
		t.Errorf("question 2 = %+v", q2)
	}
	// Wait for a few keep-alive intervals before answering.
	deadline := time.Now().Add(5 * time.Second)
	for progress.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if progress.Load() < 2 {
		t.Errorf("%d progress notifications while waiting, want at least 2", progress.Load())
	}
	res := h.do(http.MethodPost, "/question/"+props.ID+"/reply", map[string]any{
		"answers": [][]string{{"SQLite"}, {"Billing", "Auth"}, {"  ship it  "}},
	})
	if res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.res.IsError {
		t.Fatalf("tool error: %+v", got.res.Content)
	}
	structured, _ := json.Marshal(got.res.StructuredContent)
	if want := `{"action":"accept","answers":[["SQLite"],["Auth","Billing"],["ship it"]]}`; string(structured) != want {
		t.Errorf("structured content %s, want %s", structured, want)
	}
	text := got.res.Content[0].(*mcp.TextContent).Text
	if want := `User has answered your questions: "Which database?"="SQLite", "Which features?"="Auth, Billing", "Anything else?"="ship it". You can now continue with the user's answers in mind.`; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
}

func TestMCPNoneLeavesEverythingUntouched(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_quiet", map[string]any{"questionCapability": "none"})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	cs := mcpConnect(t, h, "/mcp?session=ses_quiet", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
		"questions": []any{map[string]any{"question": "May I?"}},
	}})
	if err == nil {
		t.Fatal("calling a tool a none session does not have succeeded")
	}
	// The HTTP route fails closed too.
	res := h.do(http.MethodPost, "/elicitations", map[string]any{"message": "May I?", "sessionID": "ses_quiet",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
	if res.Status != http.StatusForbidden {
		t.Errorf("POST /elicitations for a none session: %d %s", res.Status, res.Body)
	}
	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 0 {
		t.Errorf("%d questions stored", n)
	}
	// A question from another session is the next event: nothing was published for ses_quiet.
	h.create(map[string]any{"message": "Other?", "sessionID": "ses_other",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
	var props struct {
		SessionID string `json:"sessionID"`
	}
	_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &props)
	if props.SessionID != "ses_other" {
		t.Errorf("first event after the refusals is for %q", props.SessionID)
	}
}

func TestMCPCapabilityChangeKeepsLiveToolList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_s", map[string]any{"questionCapability": "user"})
	cs := mcpConnect(t, h, "/mcp?session=ses_s", nil, nil)
	putSession(t, h, "ses_s", map[string]any{"questionCapability": "none"})
	if got := toolNames(t, cs); !slices.Equal(got, []string{"ask_user_question"}) {
		t.Fatalf("live tool list changed to %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
		"questions": []any{map[string]any{"question": "Still allowed?"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("a stale tool call succeeded: %+v", res)
	}
	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 0 {
		t.Errorf("%d questions stored by a stale call", n)
	}
	// A new MCP session sees the new capability.
	if got := toolNames(t, mcpConnect(t, h, "/mcp?session=ses_s", nil, nil)); len(got) != 0 {
		t.Errorf("new session after the change: tools %v", got)
	}
}

func TestJSONRPCElicitFromNoneSessionIsAnInvalidRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_quiet", map[string]any{"questionCapability": "none"})
	res := h.do(http.MethodPost, "/elicit", map[string]any{"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
		"params": map[string]any{"message": "May I?", "sessionID": "ses_quiet",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}})
	var rpc struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	res.json(t, &rpc)
	if res.Status != http.StatusOK || rpc.ID != 7 || rpc.Error.Code != -32600 || !strings.Contains(rpc.Error.Message, `"none"`) {
		t.Errorf("JSON-RPC elicitation from a none session: %d %s", res.Status, res.Body)
	}
	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 0 {
		t.Errorf("%d questions stored", n)
	}
}

// rawMCP is an MCP client made of plain HTTP requests, for what the SDK
// clients do not let a test do: read a call's stream byte by byte, or drop it.
type rawMCP struct {
	t         *testing.T
	url       string
	sessionID string
}

func newRawMCP(t *testing.T, h *harness, path string) *rawMCP {
	t.Helper()
	c := &rawMCP{t: t, url: h.URL + path}
	res := c.post(context.Background(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	c.sessionID = res.Header.Get("Mcp-Session-Id")
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if c.sessionID == "" {
		t.Fatalf("initialize: %d without Mcp-Session-Id", res.StatusCode)
	}
	c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	return c
}

func (c *rawMCP) post(ctx context.Context, body string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if c.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

// call starts tools/call id 2 with meta as its _meta and returns the
// stream's messages, one data line each.
func (c *rawMCP) call(ctx context.Context, meta string) (next func() string, body io.Closer) {
	c.t.Helper()
	res := c.post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":`+meta+
		`,"name":"ask_user_question","arguments":{"questions":[{"question":"Go on?","options":[{"label":"Yes"},{"label":"No"}]}]}}}`)
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		c.t.Fatalf("tools/call answered %d %s", res.StatusCode, ct)
	}
	lines := bufio.NewScanner(res.Body)
	return func() string {
		c.t.Helper()
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				return data
			}
		}
		c.t.Fatalf("the stream ended: %v", lines.Err())
		return ""
	}, res.Body
}

// A call without a progress token cannot be sent progress; it is kept alive
// with pings on its own response stream instead, and still gets its answer.
func TestMCPToolWithoutProgressTokenIsKeptAliveWithPings(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{KeepAlive: 50 * time.Millisecond})
	next, body := newRawMCP(t, h, "/mcp?session=ses_raw").call(context.Background(), `{}`)
	defer body.Close()
	if msg := next(); !strings.Contains(msg, `"method":"ping"`) {
		t.Fatalf("first message on the call's stream: %s, want a ping", msg)
	}
	id := waitListed(t, h)["id"].(string)
	h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"Yes"}}})
	for {
		msg := next()
		if strings.Contains(msg, `"method":`) {
			continue // more pings, or the cancellation of one nobody answered
		}
		if !strings.Contains(msg, `"id":2`) || !strings.Contains(msg, `"structuredContent":{"action":"accept","answers":[["Yes"]]}`) {
			t.Fatalf("the call's result: %s", msg)
		}
		return
	}
}

// A client that drops a waiting call's connection without cancelling it can
// never get the answer (questiond keeps no events to resume a stream with),
// so the next keep-alive that cannot reach it withdraws the question.
func TestMCPDroppedCallIsWithdrawn(t *testing.T) {
	t.Parallel()
	for name, meta := range map[string]string{"progress": `{"progressToken":"p"}`, "ping": `{}`} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, httpapi.Options{KeepAlive: 50 * time.Millisecond})
			events := h.openStream("/event")
			events.expect(t, "server.connected")
			ctx, hangUp := context.WithCancel(context.Background())
			client := newRawMCP(t, h, "/mcp?session=ses_gone")
			next, body := client.call(ctx, meta)
			var asked struct{ ID string }
			_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &asked)
			// The first keep-alive arrived: the stream is connected. A real
			// client answers a ping; the next one then finds the stream gone.
			var first struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal([]byte(next()), &first)
			if first.Method == "ping" {
				client.post(context.Background(), `{"jsonrpc":"2.0","id":`+string(first.ID)+`,"result":{}}`).Body.Close()
			}
			hangUp()
			body.Close()
			var rejected struct{ RequestID string }
			_ = json.Unmarshal(events.expect(t, "question.rejected").Properties, &rejected)
			if rejected.RequestID != asked.ID {
				t.Fatalf("rejected %q, want %q", rejected.RequestID, asked.ID)
			}
			var view struct{ Ending string }
			h.do(http.MethodGet, "/elicitations/"+asked.ID, nil).json(t, &view)
			if view.Ending != "disconnected" {
				t.Errorf("ending %q, want disconnected", view.Ending)
			}
		})
	}
}

// An MCP client that names its project directory when it connects gets its
// questions listed and announced in that directory, the way OpenCode clients
// scope them.
func TestMCPQuestionsTakeTheConnectionsDirectory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	scoped := h.openStream("/event?directory=/work/alpha")
	scoped.expect(t, "server.connected")
	cs := mcpConnect(t, h, "/mcp?session=ses_dir&directory=/work/alpha/", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
			"questions": []any{map[string]any{"question": "Which branch?"}}}})
		done <- err
	}()
	var asked struct{ ID, SessionID string }
	_ = json.Unmarshal(scoped.expect(t, "question.asked").Properties, &asked)
	if asked.SessionID != "ses_dir" {
		t.Errorf("asked under %q", asked.SessionID)
	}
	var listed []map[string]any
	h.do(http.MethodGet, "/question?directory=/work/beta", nil).json(t, &listed)
	if len(listed) != 0 {
		t.Errorf("listed in another directory: %v", listed)
	}
	var view struct{ Directory string }
	h.do(http.MethodGet, "/elicitations/"+asked.ID, nil).json(t, &view)
	if view.Directory != "/work/alpha" {
		t.Errorf("directory %q, want /work/alpha", view.Directory)
	}
	h.do(http.MethodPost, "/question/"+asked.ID+"/reply?directory=/work/alpha", map[string]any{"answers": [][]string{{"main"}}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Live MCP sessions are bounded; a closed one makes room.
func TestMCPSessionLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Limits: httpapi.Limits{MaxMCPSessions: 2}})
	first := mcpConnect(t, h, "/mcp?session=ses_one", nil, nil)
	mcpConnect(t, h, "/mcp?session=ses_two", nil, nil)
	res := h.do(http.MethodPost, "/mcp?session=ses_three",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		"Accept", "application/json, text/event-stream")
	var named struct{ Name string }
	res.json(t, &named)
	if res.Status != http.StatusServiceUnavailable || named.Name != "ServiceUnavailable" {
		t.Fatalf("a third MCP session: %d %s", res.Status, res.Body)
	}
	if err := first.Close(); err != nil { // DELETE /mcp ends the session
		t.Fatal(err)
	}
	if got := toolNames(t, mcpConnect(t, h, "/mcp?session=ses_three", nil, nil)); len(got) != 1 {
		t.Errorf("after a session closed: tools %v", got)
	}
}
