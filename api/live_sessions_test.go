package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/session"
	"github.com/questiond/questiond/internal/testkit"
)

const (
	mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"api-live-test","version":"1"}}}`
	mcpInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	mcpToolsList   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	// askDatabase is the arguments of both question tools.
	askDatabase = `{"questions":[{"question":"Which database?","header":"Database",` +
		`"options":[{"label":"Postgres","description":"Relational"}]}]}`
)

// mcpAccept is the Accept header Streamable HTTP requires on POST.
var mcpAccept = []string{"Accept", "application/json, text/event-stream"}

// withHeader returns header with more name, value pairs after it; the last
// value of a name wins.
func withHeader(header []string, pairs ...string) []string {
	return append(slices.Clone(header), pairs...)
}

// mcpSession is an MCP session begun on /mcp.
type mcpSession struct {
	id, protocol string
	auth         []string // the Authorization pair it was begun with, if any
}

// header is what every later request of the session sends.
func (s mcpSession) header(pairs ...string) []string {
	h := withHeader(mcpAccept, "Mcp-Session-Id", s.id, "MCP-Protocol-Version", s.protocol)
	return withHeader(append(h, s.auth...), pairs...)
}

// sseMessages decodes the JSON-RPC messages of an MCP event stream body.
func sseMessages(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var messages []map[string]any
	for data := range testkit.Data(bytes.NewReader(body), 0) {
		if data == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event data %q: %v", data, err)
		}
		messages = append(messages, m)
	}
	return messages
}

// mcpResult is the result of the JSON-RPC response with id in body.
func mcpResult(t *testing.T, body []byte, id float64) map[string]any {
	t.Helper()
	for _, m := range sseMessages(t, body) {
		if m["id"] == id {
			result, ok := m["result"].(map[string]any)
			if !ok {
				t.Fatalf("response %v has no result", m)
			}
			return result
		}
	}
	t.Fatalf("no response with id %v in %q", id, body)
	return nil
}

// mcpBegin initializes an MCP session at path (which may carry ?session=)
// with extra header pairs, and sends notifications/initialized.
func (l *liveServer) mcpBegin(t *testing.T, path string, header ...string) mcpSession {
	t.Helper()
	r := l.do(t, exchange{method: "POST", path: path, body: mcpInitialize, header: withHeader(mcpAccept, header...)}, 200)
	s := mcpSession{id: r.header.Get("Mcp-Session-Id")}
	if s.id == "" {
		t.Fatalf("POST %s: initialize answered without Mcp-Session-Id", path)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("POST %s: Content-Type %q, want text/event-stream", path, ct)
	}
	s.protocol, _ = mcpResult(t, r.body, 1)["protocolVersion"].(string)
	if i := slices.Index(header, "Authorization"); i >= 0 && i%2 == 0 {
		s.auth = header[i : i+2]
	}
	if r := l.do(t, exchange{method: "POST", path: "/mcp", body: mcpInitialized, header: s.header()}, 202); len(r.body) != 0 {
		t.Errorf("202 with body %q", r.body)
	}
	return s
}

// mcpTools lists the session's tools by name.
func (l *liveServer) mcpTools(t *testing.T, s mcpSession) []string {
	t.Helper()
	r := l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: s.header()}, 200)
	names := []string{}
	tools, _ := mcpResult(t, r.body, 2)["tools"].([]any)
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	return names
}

// listen opens GET /mcp, validates the request and the answer's status,
// headers and media type against the document, and closes the stream: it
// stays open for as long as the client wants.
func (l *liveServer) listen(t *testing.T, x exchange) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	input, res := l.openStream(t, ctx, x)
	defer res.Body.Close()
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: input,
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(nil) // the document describes the media type, not MCP's frames
	if err := openapi3filter.ValidateResponse(t.Context(), in); err != nil {
		t.Errorf("%s → 200: the response breaks the document: %v", x, err)
	}
	l.record(input.Route.Operation.OperationID, http.StatusOK)
}

// exerciseSessions runs the session routes through every answer an open
// server gives, and checks that elicitations follow the capabilities:
// refused for "none", listed under the parent for "parent".
func exerciseSessions(t *testing.T, l *liveServer, events *liveStream) {
	var view struct {
		ID, QuestionCapability, ParentSessionID string
		Configured                              bool
	}
	l.do(t, exchange{method: "GET", path: "/sessions/ses_child"}, 200).decode(t, &view)
	if view.ID != "ses_child" || view.QuestionCapability != "user" || view.Configured {
		t.Errorf("a session nobody set: %+v, want the default user, not configured", view)
	}
	l.do(t, exchange{method: "GET", path: "/sessions/child", brokenRequest: true}, 400)

	child := `{"questionCapability":"parent","parentSessionID":"ses_root"}`
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_child", body: child}, 201).decode(t, &view)
	if view.QuestionCapability != "parent" || view.ParentSessionID != "ses_root" || !view.Configured {
		t.Errorf("PUT: %+v", view)
	}
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_child", body: child}, 200)
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_quiet", body: `{"questionCapability":"none"}`}, 201)

	// Refusals, each naming the field; none of them changes the record.
	for _, refused := range []struct {
		body, field string
		broken      bool
	}{
		{`{"questionCapability":"everyone"}`, "questionCapability", true},
		{`{"questionCapability":"parent"}`, "parentSessionID", true},
		{`{"questionCapability":"none","parentSessionID":"ses_root"}`, "parentSessionID", true},
		{`{"questionCapability":"parent","parentSessionID":"ses_child"}`, "parentSessionID", false}, // its own parent
		{`{"questionCapability":"user","owner":"me"}`, "owner", true},
		{`{"parentSessionID":"ses_root"}`, "questionCapability", true},
		{`{"questionCapability":"user"`, "Invalid JSON", true},
	} {
		r := l.do(t, exchange{method: "PUT", path: "/sessions/ses_child", body: refused.body, brokenRequest: refused.broken}, 400)
		if !bytes.Contains(r.body, []byte(refused.field)) {
			t.Errorf("PUT %s: %s does not name %q", refused.body, r.body, refused.field)
		}
	}
	l.do(t, exchange{method: "PUT", path: "/sessions/child", body: child, brokenRequest: true}, 400)
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_child", body: child, header: []string{"Content-Type", "text/plain"}, brokenRequest: true}, 415)
	padded := `{"questionCapability":"user"` + strings.Repeat(" ", 70<<10) + `}` // valid, and too large
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_child", body: padded}, 413)
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_child", body: child, header: []string{"Origin", "http://evil.example"}}, 403)
	l.do(t, exchange{method: "GET", path: "/sessions/ses_child"}, 200).decode(t, &view)
	if view.QuestionCapability != "parent" || view.ParentSessionID != "ses_root" {
		t.Errorf("after the refusals: %+v", view)
	}

	// "none": refused before anything is stored.
	quiet := strings.Replace(deployBody, `{"message"`, `{"sessionID":"ses_quiet","message"`, 1)
	for _, path := range []string{"/elicitations", "/elicit"} {
		var refusal struct{ Name string }
		l.do(t, exchange{method: "POST", path: path, body: quiet}, 403).decode(t, &refusal)
		if refusal.Name != "Forbidden" {
			t.Errorf("POST %s for a none session: %+v", path, refusal)
		}
	}
	var list []struct{ ID string }
	l.do(t, exchange{method: "GET", path: "/question"}, 200).decode(t, &list)
	if len(list) != 0 {
		t.Errorf("refused elicitations were stored: %+v", list)
	}

	// "parent": listed under the parent, the agent's view names the child.
	var asked struct{ ID, SessionID, AskingSessionID string }
	body := strings.Replace(deployBody, `{"message"`, `{"sessionID":"ses_child","message"`, 1)
	l.do(t, exchange{method: "POST", path: "/elicitations", body: body}, 201).decode(t, &asked)
	announced, _ := events.next(t, "question.asked")
	if sid := announced["properties"].(map[string]any)["sessionID"]; sid != "ses_root" {
		t.Errorf("question.asked under %v, want the parent ses_root", sid)
	}
	l.do(t, exchange{method: "GET", path: "/elicitations/" + asked.ID}, 200).decode(t, &asked)
	if asked.SessionID != "ses_root" || asked.AskingSessionID != "ses_child" {
		t.Errorf("elicitation of a parent session: sessionID %q askingSessionID %q", asked.SessionID, asked.AskingSessionID)
	}
	l.do(t, exchange{method: "DELETE", path: "/elicitations/" + asked.ID}, 200)
	events.next(t, "question.rejected")
}

// resetSessions deletes the records exerciseSessions set.
func resetSessions(t *testing.T, l *liveServer) {
	var old struct{ QuestionCapability string }
	l.do(t, exchange{method: "DELETE", path: "/sessions/ses_child"}, 200).decode(t, &old)
	if old.QuestionCapability != "parent" {
		t.Errorf("DELETE answered %+v, want the record as it was", old)
	}
	l.do(t, exchange{method: "DELETE", path: "/sessions/ses_child"}, 404)
	l.do(t, exchange{method: "DELETE", path: "/sessions/child", brokenRequest: true}, 400)
	l.do(t, exchange{method: "DELETE", path: "/sessions/ses_quiet", header: []string{"Origin", "http://evil.example"}}, 403)
	l.do(t, exchange{method: "DELETE", path: "/sessions/ses_quiet"}, 200)
	var view struct{ Configured bool }
	l.do(t, exchange{method: "GET", path: "/sessions/ses_child"}, 200).decode(t, &view)
	if view.Configured {
		t.Error("a deleted record is still configured")
	}
}

// exerciseMCP runs /mcp through the answers an open server gives: sessions
// of each capability with their one tool, a question asked through the
// parent, and every refusal an open server gives. It expects
// the records of exerciseSessions.
func exerciseMCP(t *testing.T, l *liveServer, events *liveStream) {
	for _, c := range []struct {
		path   string
		header []string
		want   []string
	}{
		{"/mcp?session=ses_child", nil, []string{"ask_parent_question"}},
		{"/mcp", []string{"X-Questiond-Session", "ses_quiet"}, []string{}},
		{"/mcp?session=ses_quiet", []string{"X-Questiond-Session", "ses_quiet"}, []string{}},
		{"/mcp", nil, []string{"ask_user_question"}}, // a fresh session, the default
	} {
		if got := l.mcpTools(t, l.mcpBegin(t, c.path, c.header...)); !slices.Equal(got, c.want) {
			t.Errorf("%s %v: tools %v, want %v", c.path, c.header, got, c.want)
		}
	}

	// A question through the parent: listed under it, answered by the operator.
	child := l.mcpBegin(t, "/mcp?session=ses_child")
	type sent struct {
		r   *result
		err error
	}
	done := make(chan sent, 1)
	go func() {
		r, err := l.send(context.Background(), exchange{method: "POST", path: "/mcp", header: child.header(),
			body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask_parent_question","arguments":` + askDatabase + `}}`})
		done <- sent{r, err}
	}()
	asked, _ := events.next(t, "question.asked")
	properties := asked["properties"].(map[string]any)
	if properties["sessionID"] != "ses_root" {
		t.Errorf("ask_parent_question listed under %v, want ses_root", properties["sessionID"])
	}
	var view struct{ AskingSessionID string }
	l.do(t, exchange{method: "GET", path: "/elicitations/" + properties["id"].(string)}, 200).decode(t, &view)
	if view.AskingSessionID != "ses_child" {
		t.Errorf("askingSessionID %q, want ses_child", view.AskingSessionID)
	}
	l.do(t, exchange{method: "POST", path: "/question/" + properties["id"].(string) + "/reply", body: `{"answers":[["Postgres"]]}`}, 200)
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	l.check(t, got.r, 200)
	structured, _ := json.Marshal(mcpResult(t, got.r.body, 3)["structuredContent"])
	if string(structured) != `{"action":"accept","answers":[["Postgres"]]}` {
		t.Errorf("tool result %s", structured)
	}
	events.next(t, "question.replied")

	// The session's own stream.
	l.listen(t, exchange{method: "GET", path: "/mcp", header: child.header("Accept", "text/event-stream")})

	// questiond's refusals of a session parameter: JSON, naming the field.
	for _, bad := range []struct {
		path   string
		header []string
		kind   string
		broken bool
	}{
		{"/mcp?session=child", nil, "Query", true},
		{"/mcp", []string{"X-Questiond-Session", "child"}, "Headers", true},
		{"/mcp?session=ses_child", []string{"X-Questiond-Session", "ses_quiet"}, "Headers", false},
	} {
		var refusal struct {
			Name string
			Data struct{ Kind string }
		}
		l.do(t, exchange{method: "POST", path: bad.path, body: mcpInitialize, header: withHeader(mcpAccept, bad.header...), brokenRequest: bad.broken}, 400).decode(t, &refusal)
		if refusal.Name != "BadRequest" || refusal.Data.Kind != bad.kind {
			t.Errorf("POST %s %v: %+v, want BadRequest %s", bad.path, bad.header, refusal, bad.kind)
		}
	}

	// The MCP transport's refusals, in questiond's bodies, and its JSON-RPC error.
	l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: child.header("Accept", "application/json")}, 400)
	// Without Mcp-Session-Id: the document cannot tell a stream request from OpenCode's MCP
	// status request (Accept is not a parameter), so only the answer says it is wrong.
	l.do(t, exchange{method: "GET", path: "/mcp", header: []string{"Accept", "text/event-stream"}}, 400)
	l.do(t, exchange{method: "DELETE", path: "/mcp", brokenRequest: true}, 400)
	rpc := l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: child.header("MCP-Protocol-Version", "2026-07-28")}, 400)
	if ct := rpc.header.Get("Content-Type"); ct != "application/json" || !bytes.Contains(rpc.body, []byte(`"jsonrpc":"2.0"`)) {
		t.Errorf("a refused protocol version: %s %s, want a JSON-RPC error", ct, rpc.body)
	}
	l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: child.header("Content-Type", "text/plain"), brokenRequest: true}, 415)
	padded := `{"jsonrpc":"2.0","id":4,"method":"tools/list"` + strings.Repeat(" ", 70<<10) + `}`
	l.do(t, exchange{method: "POST", path: "/mcp", body: padded, header: child.header()}, 413)
	l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: child.header("Origin", "http://evil.example")}, 403)
	gone := mcpSession{id: "mcp-unknown", protocol: child.protocol}
	l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: gone.header()}, 404)
	l.do(t, exchange{method: "GET", path: "/mcp", header: gone.header("Accept", "text/event-stream")}, 404)

	// Ending the session.
	l.do(t, exchange{method: "DELETE", path: "/mcp", header: child.header()}, 204)
	l.do(t, exchange{method: "DELETE", path: "/mcp", header: child.header()}, 404)
	l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: child.header()}, 404)
	l.doOffDocument(t, exchange{method: "PUT", path: "/mcp", body: mcpToolsList}, 405, "MethodNotAllowedError")
}

// exerciseAgentsApart checks, with agent tokens, that session records and MCP
// sessions belong to the agent that made them.
func exerciseAgentsApart(t *testing.T, l *liveServer, asAgentA, asAgentB []string) {
	quiet := `{"questionCapability":"none"}`
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_owned", body: quiet, header: asAgentA}, 201)
	l.do(t, exchange{method: "PUT", path: "/sessions/ses_owned", body: `{"questionCapability":"user"}`, header: asAgentB}, 403)
	l.do(t, exchange{method: "DELETE", path: "/sessions/ses_owned", header: asAgentB}, 403)
	var view struct{ QuestionCapability string }
	l.do(t, exchange{method: "GET", path: "/sessions/ses_owned", header: asAgentB}, 200).decode(t, &view)
	if view.QuestionCapability != "none" {
		t.Errorf("after another agent's attempts: %+v", view)
	}
	l.do(t, exchange{method: "DELETE", path: "/sessions/ses_owned", header: asAgentA}, 200)

	s := l.mcpBegin(t, "/mcp?session=ses_owned", asAgentA...)
	if got := l.mcpTools(t, s); !slices.Equal(got, []string{"ask_user_question"}) {
		t.Errorf("tools %v", got)
	}
	l.listen(t, exchange{method: "GET", path: "/mcp", header: s.header("Accept", "text/event-stream")})
	stolen := mcpSession{id: s.id, protocol: s.protocol, auth: asAgentB}
	l.do(t, exchange{method: "POST", path: "/mcp", body: mcpToolsList, header: stolen.header()}, 403)
	l.do(t, exchange{method: "GET", path: "/mcp", header: stolen.header("Accept", "text/event-stream")}, 403)
	l.do(t, exchange{method: "DELETE", path: "/mcp", header: stolen.header()}, 403)
	l.do(t, exchange{method: "DELETE", path: "/mcp", header: s.header()}, 204)
}

// failingJournal keeps session records nowhere: every write fails.
type failingJournal struct{}

func (failingJournal) Load(context.Context) (map[string][]byte, error) { return nil, nil }
func (failingJournal) Put(context.Context, string, []byte) error {
	return errors.New("disk full")
}
func (failingJournal) Delete(context.Context, string) error { return errors.New("disk full") }

// TestLiveSessionRecordLimitsFollowTheDocument: a registry at its limit
// refuses new records with 429 (and still replaces its own), and one whose
// journal fails answers 503.
func TestLiveSessionRecordLimitsFollowTheDocument(t *testing.T) {
	t.Run("limit", func(t *testing.T) {
		registry, err := session.Open(t.Context(), session.Options{MaxSessions: 1})
		if err != nil {
			t.Fatal(err)
		}
		l := startLiveWith(t, httpapi.Options{Sessions: registry})
		l.do(t, exchange{method: "PUT", path: "/sessions/ses_a", body: `{"questionCapability":"none"}`}, 201)
		l.do(t, exchange{method: "PUT", path: "/sessions/ses_b", body: `{"questionCapability":"none"}`}, 429)
		l.do(t, exchange{method: "PUT", path: "/sessions/ses_a", body: `{"questionCapability":"user"}`}, 200)
		l.assertValidated(t, []string{"elicitation.sessionSet 429"})
	})
	t.Run("journal fails", func(t *testing.T) {
		registry, err := session.Open(t.Context(), session.Options{Journal: failingJournal{}})
		if err != nil {
			t.Fatal(err)
		}
		l := startLiveWith(t, httpapi.Options{Sessions: registry})
		l.do(t, exchange{method: "PUT", path: "/sessions/ses_a", body: `{"questionCapability":"none"}`}, 503)
		var view struct{ Configured bool }
		l.do(t, exchange{method: "GET", path: "/sessions/ses_a"}, 200).decode(t, &view)
		if view.Configured {
			t.Error("a record the journal refused was kept")
		}
		l.assertValidated(t, []string{"elicitation.sessionSet 503"})
	})
}
