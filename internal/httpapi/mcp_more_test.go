package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// More of /mcp through the Go SDK's client over real HTTP, and raw HTTP
// where the SDK client would hide the status: the parent tool, the endings
// of a call (answer, rejection, timeout, cancellation, Release), tool input
// errors, the pending limit, and who may connect and use a session.

// mcpAccept is what a Streamable HTTP client must accept.
const mcpAccept = "application/json, text/event-stream"

// initializeBody is the first request of an MCP session.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// mcpRaw sends one request to /mcp as a Streamable HTTP client would, with
// extra header name/value pairs.
func mcpRaw(t *testing.T, h *harness, method, path, body string, headers ...string) response {
	t.Helper()
	return h.do(method, path, body, append([]string{"Accept", mcpAccept}, headers...)...)
}

// twoPrompts is a tool input: a choice and a free-text question.
func twoPrompts() map[string]any {
	return map[string]any{"questions": []any{
		map[string]any{"question": "Which database?", "header": "Database", "options": []any{
			map[string]any{"label": "Postgres", "description": "Relational"},
			map[string]any{"label": "SQLite", "description": "Embedded"},
		}},
		map[string]any{"question": "Anything else?", "header": "Notes"},
	}}
}

type toolCall struct {
	res *mcp.CallToolResult
	err error
}

// callAsync calls tool in the background; the call ends with ctx.
func callAsync(ctx context.Context, cs *mcp.ClientSession, tool string, args any) <-chan toolCall {
	done := make(chan toolCall, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		done <- toolCall{res, err}
	}()
	return done
}

// ended waits for a call to return.
func ended(t *testing.T, done <-chan toolCall) toolCall {
	t.Helper()
	select {
	case got := <-done:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("the tool call did not return within 10s")
		return toolCall{}
	}
}

// callNow calls tool and waits for its result.
func callNow(t *testing.T, cs *mcp.ClientSession, tool string, args any) toolCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return ended(t, callAsync(ctx, cs, tool, args))
}

func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if text, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, text.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// wantToolResult checks a successful call's structured content (to the byte)
// and text.
func wantToolResult(t *testing.T, what string, got toolCall, structured, text string) {
	t.Helper()
	if got.err != nil {
		t.Fatalf("%s: %v", what, got.err)
	}
	if got.res.IsError {
		t.Fatalf("%s: tool error %q", what, toolText(got.res))
	}
	raw, _ := json.Marshal(got.res.StructuredContent)
	if string(raw) != structured {
		t.Errorf("%s: structured content %s, want %s", what, raw, structured)
	}
	if toolText(got.res) != text {
		t.Errorf("%s: text %q, want %q", what, toolText(got.res), text)
	}
}

// askedProps reads a question.asked frame.
func askedProps(t *testing.T, f frame) (id, sessionID string) {
	t.Helper()
	var p struct{ ID, SessionID string }
	if err := json.Unmarshal(f.Properties, &p); err != nil {
		t.Fatal(err)
	}
	return p.ID, p.SessionID
}

// wantEndedEvent reads the next event: the end of question id.
func wantEndedEvent(t *testing.T, events *stream, typ, id string) {
	t.Helper()
	var p struct{ RequestID string }
	_ = json.Unmarshal(events.expect(t, typ).Properties, &p)
	if p.RequestID != id {
		t.Errorf("%s for %s, want for %s", typ, p.RequestID, id)
	}
}

func wantNothingPending(t *testing.T, h *harness) {
	t.Helper()
	var listed []any
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 0 {
		t.Errorf("GET /question lists %v, want nothing", listed)
	}
}

func TestMCPAskParentRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_child", map[string]any{"questionCapability": "parent", "parentSessionID": "ses_root"})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	cs := mcpConnect(t, h, "/mcp?session=ses_child", nil, nil)

	ask := func() (string, <-chan toolCall) {
		t.Helper()
		done := callAsync(context.Background(), cs, "ask_parent_question", twoPrompts())
		id, sessionID := askedProps(t, events.expect(t, "question.asked"))
		if sessionID != "ses_root" {
			t.Errorf("question.asked under %q, want the parent ses_root", sessionID)
		}
		var listed []struct{ ID, SessionID string }
		h.do(http.MethodGet, "/question", nil).json(t, &listed)
		if len(listed) != 1 || listed[0].ID != id || listed[0].SessionID != "ses_root" {
			t.Errorf("GET /question: %+v, want %s under ses_root", listed, id)
		}
		var view struct {
			SessionID, AskingSessionID string
		}
		h.do(http.MethodGet, "/elicitations/"+id, nil).json(t, &view)
		if view.SessionID != "ses_root" || view.AskingSessionID != "ses_child" {
			t.Errorf("agent view of %s: %+v, want ses_root asked by ses_child", id, view)
		}
		return id, done
	}

	id, done := ask()
	if res := h.do(http.MethodPost, "/question/"+id+"/reject", `{"action":"decline"}`); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	wantToolResult(t, "declined", ended(t, done), `{"action":"decline"}`, "The user dismissed this question")
	wantEndedEvent(t, events, "question.rejected", id)

	// OpenCode clients reject without a body.
	id, done = ask()
	if res := h.do(http.MethodPost, "/question/"+id+"/reject", nil); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	got := ended(t, done)
	if got.err != nil || got.res.IsError || toolText(got.res) != "The user dismissed this question" {
		t.Errorf("plain reject: %+v %v, want the dismissal text", got.res, got.err)
	} else if action := got.res.StructuredContent.(map[string]any)["action"]; action != "cancel" {
		t.Errorf("plain reject: action %v, want cancel: the operator dismissed it (not now), as HTTP agents hear it", action)
	}
	wantEndedEvent(t, events, "question.rejected", id)

	id, done = ask()
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["Postgres"],[]]}`); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	wantToolResult(t, "answered", ended(t, done), `{"action":"accept","answers":[["Postgres"],[]]}`,
		`User has answered your questions: "Which database?"="Postgres", "Anything else?"="Unanswered". You can now continue with the user's answers in mind.`)
	wantEndedEvent(t, events, "question.replied", id)
	wantNothingPending(t, h)
}

func TestMCPTimeoutIsCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{DefaultTimeout: 300 * time.Millisecond})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	cs := mcpConnect(t, h, "/mcp?session=ses_slow", nil, nil)
	done := callAsync(context.Background(), cs, "ask_user_question", twoPrompts())
	id, _ := askedProps(t, events.expect(t, "question.asked"))
	got := ended(t, done)
	if got.err != nil || got.res.IsError {
		t.Fatalf("timed-out call: %+v %v", got.res, got.err)
	}
	if raw, _ := json.Marshal(got.res.StructuredContent); string(raw) != `{"action":"cancel"}` {
		t.Errorf("structured content %s, want {\"action\":\"cancel\"}", raw)
	}
	if text := toolText(got.res); !strings.Contains(text, "Nobody answered in time") {
		t.Errorf("text %q does not say the question timed out", text)
	}
	wantEndedEvent(t, events, "question.rejected", id)
	wantNothingPending(t, h)
}

func TestMCPCancelledCallWithdrawsTheQuestion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	cs := mcpConnect(t, h, "/mcp?session=ses_impatient", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := callAsync(ctx, cs, "ask_user_question", twoPrompts())
	id, _ := askedProps(t, events.expect(t, "question.asked"))
	cancel()
	if got := ended(t, done); got.err == nil {
		t.Errorf("a cancelled call returned %+v", got.res)
	}
	wantEndedEvent(t, events, "question.rejected", id)
	wantNothingPending(t, h)
	q, err := h.store.Get(context.Background(), id)
	if err != nil || q.Ended == nil || q.Ended.Ending != pending.EndWithdrawn {
		t.Errorf("the cancelled call's question: %+v %v, want withdrawn", q, err)
	}
	// The MCP session lives on and can ask again.
	done = callAsync(context.Background(), cs, "ask_user_question", twoPrompts())
	id, _ = askedProps(t, events.expect(t, "question.asked"))
	h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SQLite"],["no"]]}`)
	wantToolResult(t, "after a cancelled call", ended(t, done), `{"action":"accept","answers":[["SQLite"],["no"]]}`,
		`User has answered your questions: "Which database?"="SQLite", "Anything else?"="no". You can now continue with the user's answers in mind.`)
}

func TestMCPInvalidToolInputIsAToolError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	cs := mcpConnect(t, h, "/mcp?session=ses_sloppy", nil, nil)
	q := func(fields ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(fields); i += 2 {
			m[fields[i].(string)] = fields[i+1]
		}
		return m
	}
	opt := func(label string) map[string]any { return map[string]any{"label": label, "description": "d"} }
	// Each refusal names the field: questiond's own checks as a path into
	// the input, the SDK's check of the tool's input schema as a JSON pointer
	// (without the index, which the SDK does not give).
	cases := []struct {
		name      string
		questions []any
		field     []string // the message starts with one of these
	}{
		{"no questions", []any{}, []string{"questions: ", `validating "arguments": validating root: validating /properties/questions: minItems`}},
		{"empty question", []any{q("question", "")}, []string{"questions[0].question: ", `validating "arguments": validating root: validating /properties/questions: validating /properties/questions/items: validating /properties/questions/items/properties/question: minLength`}},
		{"blank question", []any{q("question", " \n\t ")}, []string{"questions[0].question: "}},
		{"duplicate labels", []any{q("question", "Pick", "options", []any{opt("A"), opt("A")})}, []string{"questions[0].options[1].label: "}},
		{"labels equal once trimmed", []any{q("question", "Pick", "options", []any{opt("A"), opt(" A ")})}, []string{"questions[0].options[1].label: "}},
		{"blank label", []any{q("question", "Pick", "options", []any{opt("A"), opt("  ")})}, []string{"questions[0].options[1].label: "}},
		{"empty label", []any{q("question", "Pick", "options", []any{opt("A"), opt("")})}, []string{"questions[0].options[1].label: ", "validating /properties/questions/items/properties/options/items/properties/label: minLength"}},
		{"control character in a label", []any{q("question", "Pick", "options", []any{opt("A\x1b[2J")})}, []string{"questions[0].options[0].label: "}},
		{"multiple without options", []any{q("question", "Which?", "multiple", true)}, []string{"questions[0].multiple: "}},
		{"multiple with empty options", []any{q("question", "Which?", "options", []any{}, "multiple", true)}, []string{"questions[0].multiple: "}},
		{"the second question", []any{q("question", "Fine"), q("question", "Pick", "options", []any{opt("B"), opt("B")})}, []string{"questions[1].options[1].label: "}},
	}
	for _, c := range cases {
		got := callNow(t, cs, "ask_user_question", map[string]any{"questions": c.questions})
		if got.err != nil {
			t.Errorf("%s: protocol error %v, want a tool error", c.name, got.err)
			continue
		}
		text := toolText(got.res)
		named := false
		for _, f := range c.field {
			named = named || strings.HasPrefix(text, f) || (strings.HasPrefix(f, "validating") && strings.Contains(text, f))
		}
		if !got.res.IsError || !named {
			t.Errorf("%s: isError %v, text %q, want a tool error naming %q", c.name, got.res.IsError, text, c.field)
		}
	}
	// Input the tool's schema refuses: an error either way, nothing asked.
	for _, args := range []any{map[string]any{}, map[string]any{"questions": "Which?"}, map[string]any{"questions": []any{q("header", "H")}}} {
		if got := callNow(t, cs, "ask_user_question", args); got.err == nil && !got.res.IsError {
			t.Errorf("arguments %v: %+v, want an error", args, got.res)
		}
	}
	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 0 {
		t.Errorf("%d questions stored by invalid calls", n)
	}
	sentinel := h.create(seedForm()).ID
	if got := askedID(t, events.expect(t, "question.asked")); got != sentinel {
		t.Errorf("first event after the invalid calls is %s, want the sentinel %s", got, sentinel)
	}
}

func TestMCPConnectRefusesBadSessionIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	cases := []struct {
		name    string
		path    string
		headers []string
		field   string
	}{
		{"bad query", "/mcp?session=abc", nil, "session"},
		{"query too long", "/mcp?session=ses_" + strings.Repeat("x", 101), nil, "session"},
		{"query with a space", "/mcp?session=ses_a%20b", nil, "session"},
		{"bad header", "/mcp", []string{"X-Questiond-Session", "que_abc"}, "X-Questiond-Session"},
		{"query and header differ", "/mcp?session=ses_a", []string{"X-Questiond-Session", "ses_b"}, "session"},
	}
	for _, c := range cases {
		wantBadRequestAt(t, c.name, mcpRaw(t, h, http.MethodPost, c.path, initializeBody, c.headers...), c.field)
	}
	// The SDK's client sees the refusal as a failed connect.
	client := mcp.NewClient(&mcp.Implementation{Name: "questiond-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.URL + "/mcp?session=bad"}, nil); err == nil {
		_ = cs.Close()
		t.Error("the SDK client connected with ?session=bad")
	}
	// The same id twice is no conflict.
	res := mcpRaw(t, h, http.MethodPost, "/mcp?session=ses_same", initializeBody, "X-Questiond-Session", "ses_same")
	if res.Status != http.StatusOK || res.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("query and header agreeing: %d %s, want 200 with a session", res.Status, res.Body)
	}
}

func TestMCPSessionsBelongToTheirAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authAgentsOnly()})
	res := mcpRaw(t, h, http.MethodPost, "/mcp", initializeBody)
	wantStatusError(t, "initialize without a token", res, http.StatusUnauthorized, "Unauthorized")
	if got := res.Header.Get("WWW-Authenticate"); got != `Bearer realm="questiond"` {
		t.Errorf("WWW-Authenticate %q", got)
	}
	wantStatusError(t, "initialize with an unknown token", mcpRaw(t, h, http.MethodPost, "/mcp", initializeBody, "Authorization", bearerAuth(unknownToken)),
		http.StatusUnauthorized, "Unauthorized")

	cs := mcpConnect(t, h, "/mcp?session=ses_alpha", map[string]string{"Authorization": bearerAuth(alphaToken)}, nil)
	listTools := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	use := func(auth string, method, body string) response {
		t.Helper()
		return mcpRaw(t, h, method, "/mcp", body, "Authorization", auth, "Mcp-Session-Id", cs.ID())
	}
	// alpha may use its session by hand too: the refusals below are about the agent.
	if res := use(bearerAuth(alphaToken), http.MethodPost, listTools); res.Status != http.StatusOK || !strings.Contains(string(res.Body), "ask_user_question") {
		t.Fatalf("alpha's own session: %d %s", res.Status, res.Body)
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		body := ""
		if method == http.MethodPost {
			body = listTools
		}
		wantStatusError(t, method+" /mcp as beta with alpha's Mcp-Session-Id", use(bearerAuth(betaToken), method, body), http.StatusForbidden, "Forbidden")
		wantStatusError(t, method+" /mcp without a token", use("", method, body), http.StatusUnauthorized, "Unauthorized")
	}
	// beta's DELETE did not end alpha's session.
	if got := toolNames(t, cs); len(got) != 1 || got[0] != "ask_user_question" {
		t.Errorf("alpha's session after beta's attempts: tools %v", got)
	}
	// The question a tool call asks is alpha's: beta cannot see it.
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	done := callAsync(context.Background(), cs, "ask_user_question", twoPrompts())
	id, _ := askedProps(t, events.expect(t, "question.asked"))
	if res := h.do(http.MethodGet, "/elicitations/"+id, nil, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusOK {
		t.Errorf("alpha reading its tool's question: %d %s", res.Status, res.Body)
	}
	if res := h.do(http.MethodGet, "/elicitations/"+id, nil, "Authorization", bearerAuth(betaToken)); res.Status != http.StatusNotFound {
		t.Errorf("beta reading alpha's tool's question: %d %s, want 404", res.Status, res.Body)
	}
	h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["Postgres"],["fine"]]}`)
	if got := ended(t, done); got.err != nil || got.res.IsError {
		t.Errorf("alpha's call: %+v %v", got.res, got.err)
	}
}

func TestMCPPendingLimitIsAToolError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Limits: httpapi.Limits{MaxPending: 1}})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	first := h.create(seedForm()).ID
	events.expect(t, "question.asked")
	cs := mcpConnect(t, h, "/mcp?session=ses_crowded", nil, nil)
	got := callNow(t, cs, "ask_user_question", twoPrompts())
	if got.err != nil || !got.res.IsError || !strings.Contains(toolText(got.res), "limit") {
		t.Fatalf("call over the pending limit: %+v %v, want a tool error naming the limit", got.res, got.err)
	}
	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 1 {
		t.Errorf("%d questions pending, want 1", n)
	}
	// Once there is room the same session asks.
	h.do(http.MethodDelete, "/elicitations/"+first, nil)
	wantEndedEvent(t, events, "question.rejected", first)
	done := callAsync(context.Background(), cs, "ask_user_question", twoPrompts())
	id, _ := askedProps(t, events.expect(t, "question.asked"))
	h.do(http.MethodPost, "/question/"+id+"/reject", `{"action":"decline"}`)
	wantToolResult(t, "after room was made", ended(t, done), `{"action":"decline"}`, "The user dismissed this question")
}

func TestMCPReleaseWithdrawsWaitingCalls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	cs := mcpConnect(t, h, "/mcp?session=ses_waiting", nil, nil)
	done := callAsync(context.Background(), cs, "ask_user_question", twoPrompts())
	id, _ := askedProps(t, events.expect(t, "question.asked"))
	if err := h.api.Questions().Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Release returns only once the call has withdrawn its question, so a
	// shutdown announces the withdrawal before it closes the bus.
	if q, err := h.store.Get(context.Background(), id); err != nil || q.Ended == nil || q.Ended.Ending != pending.EndShutdown {
		t.Fatalf("when Release returned the call's question was %+v %v, want ended by the shutdown", q, err)
	}
	got := ended(t, done)
	if got.err == nil && !got.res.IsError {
		t.Errorf("a call let go by Release returned %+v", got.res)
	}
	wantEndedEvent(t, events, "question.rejected", id)
	wantNothingPending(t, h)
	q, err := h.store.Get(context.Background(), id)
	if err != nil || q.Ended == nil {
		t.Fatalf("after Release the call's question is %+v %v, want ended", q, err)
	}
	// New MCP sessions are refused with a JSON 503.
	res := mcpRaw(t, h, http.MethodPost, "/mcp", initializeBody)
	expectNamed(t, res, http.StatusServiceUnavailable, "ServiceUnavailable")
}

// The host guard decides which Host names are served; /mcp must serve the
// same ones as every other route.
func TestMCPServesTheAllowedHosts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{ListenAddr: "127.0.0.1:4097", AllowedHosts: []string{"questiond.internal"}})
	withHost := func(method, path, body, host string) int {
		t.Helper()
		req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Accept", mcpAccept)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, host := range []string{"questiond.internal", "questiond.internal:4097"} {
		if got := withHost(http.MethodGet, "/sessions/ses_h", "", host); got != http.StatusOK {
			t.Errorf("GET /sessions/ses_h with Host %s: %d, want 200", host, got)
		}
		if got := withHost(http.MethodPost, "/mcp", initializeBody, host); got != http.StatusOK {
			t.Errorf("POST /mcp with Host %s: %d, want 200 like every other route", host, got)
		}
	}
	if got := withHost(http.MethodPost, "/mcp", initializeBody, "attacker.example"); got != http.StatusMisdirectedRequest {
		t.Errorf("POST /mcp with Host attacker.example: %d, want 421", got)
	}
}
