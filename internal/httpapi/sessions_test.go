package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// The session routes (PUT/GET/DELETE /sessions/{sessionID}) and how the
// capability they set steers POST /elicitations and POST /elicit, through
// real HTTP and the operator's event stream.

// sessionView is the body of every session route.
type sessionView struct {
	ID                 string `json:"id"`
	QuestionCapability string `json:"questionCapability"`
	ParentSessionID    string `json:"parentSessionID"`
	Configured         bool   `json:"configured"`
}

// wantSessionBody checks a session route's answer to the byte: the view
// and nothing else (no setBy, no timestamps).
func wantSessionBody(t *testing.T, req string, res response, status int, want string) {
	t.Helper()
	if res.Status != status || string(res.Body) != want {
		t.Errorf("%s: %d %s, want %d %s", req, res.Status, res.Body, status, want)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q", req, ct)
	}
}

// wantBadRequestAt checks a 400 whose message names field the way OpenCode
// names it: `at ["field"]`.
func wantBadRequestAt(t *testing.T, req string, res response, field string) {
	t.Helper()
	var body struct {
		Name string
		Data struct{ Message, Kind string }
	}
	if res.Status != http.StatusBadRequest || json.Unmarshal(res.Body, &body) != nil || body.Name != "BadRequest" || body.Data.Kind == "" {
		t.Errorf("%s: %d %s, want a 400 BadRequest", req, res.Status, res.Body)
		return
	}
	if at := `at ["` + field + `"]`; !strings.Contains(body.Data.Message, at) {
		t.Errorf("%s: message %q does not name %s", req, body.Data.Message, at)
	}
}

func askingForm(sessionID string) map[string]any {
	form := seedForm()
	if sessionID != "" {
		form["sessionID"] = sessionID
	}
	return form
}

func TestSessionPutCreatesThenReplaces(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	wantSessionBody(t, "first PUT", putSession(t, h, "ses_child", map[string]any{"questionCapability": "parent", "parentSessionID": "ses_root"}),
		http.StatusCreated, `{"id":"ses_child","questionCapability":"parent","parentSessionID":"ses_root","configured":true}`)
	wantSessionBody(t, "GET after the first PUT", h.do(http.MethodGet, "/sessions/ses_child", nil),
		http.StatusOK, `{"id":"ses_child","questionCapability":"parent","parentSessionID":"ses_root","configured":true}`)
	wantSessionBody(t, "second PUT", putSession(t, h, "ses_child", map[string]any{"questionCapability": "none"}),
		http.StatusOK, `{"id":"ses_child","questionCapability":"none","configured":true}`)
	wantSessionBody(t, "GET after the second PUT", h.do(http.MethodGet, "/sessions/ses_child", nil),
		http.StatusOK, `{"id":"ses_child","questionCapability":"none","configured":true}`)
	// A null parent is no parent.
	wantSessionBody(t, "user with a null parent", putSession(t, h, "ses_other", `{"questionCapability":"user","parentSessionID":null}`),
		http.StatusCreated, `{"id":"ses_other","questionCapability":"user","configured":true}`)
	// The longest id the pattern allows.
	long := "ses_" + strings.Repeat("a-_9", 25)
	if res := putSession(t, h, long, map[string]any{"questionCapability": "none"}); res.Status != http.StatusCreated {
		t.Errorf("PUT of a %d-character id: %d %s, want 201", len(long), res.Status, res.Body)
	}
}

func TestSessionPutRefusesInvalidBodiesNamingTheField(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	long := "ses_" + strings.Repeat("x", 101)
	cases := []struct{ name, body, field string }{
		{"parent without parentSessionID", `{"questionCapability":"parent"}`, "parentSessionID"},
		{"parent with an empty parentSessionID", `{"questionCapability":"parent","parentSessionID":""}`, "parentSessionID"},
		{"parent with a null parentSessionID", `{"questionCapability":"parent","parentSessionID":null}`, "parentSessionID"},
		{"parentSessionID on none", `{"questionCapability":"none","parentSessionID":"ses_root"}`, "parentSessionID"},
		{"its own parent", `{"questionCapability":"parent","parentSessionID":"ses_s"}`, "parentSessionID"},
		{"a user that is its own parent", `{"questionCapability":"user","parentSessionID":"ses_s"}`, "parentSessionID"},
		{"a user naming a parent", `{"questionCapability":"user","parentSessionID":"ses_root"}`, "parentSessionID"},
		{"parent id without prefix", `{"questionCapability":"parent","parentSessionID":"root"}`, "parentSessionID"},
		{"parent id with a space", `{"questionCapability":"parent","parentSessionID":"ses_a b"}`, "parentSessionID"},
		{"parent id too long", `{"questionCapability":"parent","parentSessionID":"` + long + `"}`, "parentSessionID"},
		{"parent id with a slash", `{"questionCapability":"parent","parentSessionID":"ses_a/b"}`, "parentSessionID"},
		{"unknown capability", `{"questionCapability":"admin"}`, "questionCapability"},
		{"capability in another case", `{"questionCapability":"User"}`, "questionCapability"},
		{"empty capability", `{"questionCapability":""}`, "questionCapability"},
		{"missing capability", `{}`, "questionCapability"},
		{"only a parent", `{"parentSessionID":"ses_root"}`, "questionCapability"},
		{"null capability", `{"questionCapability":null}`, "questionCapability"},
		{"capability a number", `{"questionCapability":1}`, "questionCapability"},
		{"capability an array", `{"questionCapability":["user"]}`, "questionCapability"},
		{"capability a boolean", `{"questionCapability":true}`, "questionCapability"},
		{"parent a number", `{"questionCapability":"parent","parentSessionID":5}`, "parentSessionID"},
		{"parent an object", `{"questionCapability":"parent","parentSessionID":{"id":"ses_root"}}`, "parentSessionID"},
		{"unknown key", `{"questionCapability":"user","extra":1}`, "extra"},
		{"forged owner", `{"questionCapability":"user","setBy":"beta"}`, "setBy"},
		{"an id in the body", `{"questionCapability":"user","id":"ses_other"}`, "id"},
		{"configured in the body", `{"questionCapability":"user","configured":false}`, "configured"},
	}
	// Each refusal leaves both a session nobody set and a configured one as they were.
	putSession(t, h, "ses_kept", map[string]any{"questionCapability": "parent", "parentSessionID": "ses_root"})
	for _, c := range cases {
		for _, id := range []string{"ses_s", "ses_kept"} {
			body := strings.ReplaceAll(c.body, `"ses_s"`, `"`+id+`"`)
			wantBadRequestAt(t, c.name+" on "+id, putSession(t, h, id, body), c.field)
		}
	}
	for _, body := range []string{``, `[]`, `"user"`, `null`, `{"questionCapability":`, `{"questionCapability":"user"} {}`} {
		res := putSession(t, h, "ses_s", body)
		if res.Status != http.StatusBadRequest {
			t.Errorf("PUT with body %q: %d %s, want 400", body, res.Status, res.Body)
		}
	}
	if res := h.do(http.MethodPut, "/sessions/ses_s", `{"questionCapability":"none"}`, "Content-Type", "text/plain"); res.Status != http.StatusUnsupportedMediaType {
		t.Errorf("PUT as text/plain: %d %s, want 415", res.Status, res.Body)
	}
	wantSessionBody(t, "GET of the session nobody set", h.do(http.MethodGet, "/sessions/ses_s", nil),
		http.StatusOK, `{"id":"ses_s","questionCapability":"user","configured":false}`)
	wantSessionBody(t, "GET of the configured session", h.do(http.MethodGet, "/sessions/ses_kept", nil),
		http.StatusOK, `{"id":"ses_kept","questionCapability":"parent","parentSessionID":"ses_root","configured":true}`)
}

func TestSessionRoutesRefuseBadPathIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	for _, id := range []string{"abc", "ses_", "ses", "SES_abc", "ses_a.b", "ses_a%20b", "ses_%C3%A9", "que_abc", "ses_" + strings.Repeat("x", 101)} {
		for _, method := range []string{http.MethodPut, http.MethodGet, http.MethodDelete} {
			var body any
			if method == http.MethodPut {
				body = `{"questionCapability":"none"}`
			}
			wantBadRequestAt(t, method+" /sessions/"+id, h.do(method, "/sessions/"+id, body), "sessionID")
		}
	}
}

func TestSessionGetDefaultAndDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	wantSessionBody(t, "GET of an unknown session", h.do(http.MethodGet, "/sessions/ses_new", nil),
		http.StatusOK, `{"id":"ses_new","questionCapability":"user","configured":false}`)
	res := h.do(http.MethodDelete, "/sessions/ses_new", nil)
	expectNamed(t, res, http.StatusNotFound, "NotFoundError")

	putSession(t, h, "ses_new", map[string]any{"questionCapability": "none"})
	wantSessionBody(t, "DELETE", h.do(http.MethodDelete, "/sessions/ses_new", nil),
		http.StatusOK, `{"id":"ses_new","questionCapability":"none","configured":true}`)
	wantSessionBody(t, "GET after DELETE", h.do(http.MethodGet, "/sessions/ses_new", nil),
		http.StatusOK, `{"id":"ses_new","questionCapability":"user","configured":false}`)
	expectNamed(t, h.do(http.MethodDelete, "/sessions/ses_new", nil), http.StatusNotFound, "NotFoundError")
	// The default is back in force: the session may ask again.
	if res := h.do(http.MethodPost, "/elicitations", askingForm("ses_new")); res.Status != http.StatusCreated {
		t.Errorf("asking after DELETE: %d %s, want 201", res.Status, res.Body)
	}
	// And a PUT after the DELETE creates anew.
	if res := putSession(t, h, "ses_new", map[string]any{"questionCapability": "user"}); res.Status != http.StatusCreated {
		t.Errorf("PUT after DELETE: %d %s, want 201", res.Status, res.Body)
	}

	registry, err := session.Open(context.Background(), session.Options{Default: session.None})
	if err != nil {
		t.Fatal(err)
	}
	quiet := newHarness(t, httpapi.Options{Sessions: registry})
	wantSessionBody(t, "GET of an unknown session, default none", quiet.do(http.MethodGet, "/sessions/ses_new", nil),
		http.StatusOK, `{"id":"ses_new","questionCapability":"none","configured":false}`)
}

func TestSessionBelongsToTheAgentThatSetIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authBoth()})
	as := func(auth string) []string { return []string{"Authorization", auth} }
	alpha, beta, operator := as(bearerAuth(alphaToken)), as(bearerAuth(betaToken)), as(basicAuth("opencode", operatorPassword))
	const alphas = `{"id":"ses_a","questionCapability":"parent","parentSessionID":"ses_root","configured":true}`

	if res := h.do(http.MethodPut, "/sessions/ses_a", `{"questionCapability":"parent","parentSessionID":"ses_root"}`, alpha...); res.Status != http.StatusCreated {
		t.Fatalf("alpha's PUT: %d %s", res.Status, res.Body)
	}
	for _, body := range []string{`{"questionCapability":"none"}`, `{"questionCapability":"parent","parentSessionID":"ses_root"}`} {
		wantStatusError(t, "beta's PUT "+body, h.do(http.MethodPut, "/sessions/ses_a", body, beta...), http.StatusForbidden, "Forbidden")
	}
	wantStatusError(t, "beta's DELETE", h.do(http.MethodDelete, "/sessions/ses_a", nil, beta...), http.StatusForbidden, "Forbidden")
	wantSessionBody(t, "GET as beta after beta's refused changes", h.do(http.MethodGet, "/sessions/ses_a", nil, beta...), http.StatusOK, alphas)

	// Operators may read it (and change it: see ownership_test.go); callers
	// without credentials may not.
	wantSessionBody(t, "GET as the operator", h.do(http.MethodGet, "/sessions/ses_a", nil, operator...), http.StatusOK, alphas)
	for _, method := range []string{http.MethodPut, http.MethodGet, http.MethodDelete} {
		var body any
		if method == http.MethodPut {
			body = `{"questionCapability":"none"}`
		}
		res := h.do(method, "/sessions/ses_a", body)
		wantStatusError(t, method+" without credentials", res, http.StatusUnauthorized, "Unauthorized")
		if got := res.Header.Get("WWW-Authenticate"); got != `Bearer realm="questiond"` {
			t.Errorf("%s without credentials: WWW-Authenticate %q", method, got)
		}
	}
	wantSessionBody(t, "GET as alpha after every refusal", h.do(http.MethodGet, "/sessions/ses_a", nil, alpha...), http.StatusOK, alphas)

	// beta's own sessions are beta's; alpha's remain alpha's to change.
	if res := h.do(http.MethodPut, "/sessions/ses_b", `{"questionCapability":"none"}`, beta...); res.Status != http.StatusCreated {
		t.Fatalf("beta's PUT of its own session: %d %s", res.Status, res.Body)
	}
	wantStatusError(t, "alpha's DELETE of beta's session", h.do(http.MethodDelete, "/sessions/ses_b", nil, alpha...), http.StatusForbidden, "Forbidden")
	if res := h.do(http.MethodPut, "/sessions/ses_a", `{"questionCapability":"user"}`, alpha...); res.Status != http.StatusOK {
		t.Errorf("alpha's second PUT: %d %s, want 200", res.Status, res.Body)
	}
	if res := h.do(http.MethodDelete, "/sessions/ses_a", nil, alpha...); res.Status != http.StatusOK {
		t.Errorf("alpha's DELETE: %d %s, want 200", res.Status, res.Body)
	}
	// Once deleted, the session is anyone's to set.
	if res := h.do(http.MethodPut, "/sessions/ses_a", `{"questionCapability":"none"}`, beta...); res.Status != http.StatusCreated {
		t.Errorf("beta's PUT after alpha's DELETE: %d %s, want 201", res.Status, res.Body)
	}
}

func TestSessionLimitIs429(t *testing.T) {
	t.Parallel()
	registry, err := session.Open(context.Background(), session.Options{MaxSessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, httpapi.Options{Sessions: registry})
	for _, id := range []string{"ses_a", "ses_b"} {
		if res := putSession(t, h, id, map[string]any{"questionCapability": "none"}); res.Status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", id, res.Status, res.Body)
		}
	}
	expectNamed(t, putSession(t, h, "ses_c", map[string]any{"questionCapability": "none"}), http.StatusTooManyRequests, "TooManyRequests")
	wantSessionBody(t, "GET of the refused session", h.do(http.MethodGet, "/sessions/ses_c", nil),
		http.StatusOK, `{"id":"ses_c","questionCapability":"user","configured":false}`)
	// Replacing a record takes no new room.
	if res := putSession(t, h, "ses_a", map[string]any{"questionCapability": "user"}); res.Status != http.StatusOK {
		t.Errorf("replacing while full: %d %s, want 200", res.Status, res.Body)
	}
	if res := h.do(http.MethodDelete, "/sessions/ses_b", nil); res.Status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", res.Status, res.Body)
	}
	if res := putSession(t, h, "ses_c", map[string]any{"questionCapability": "none"}); res.Status != http.StatusCreated {
		t.Errorf("PUT after a DELETE made room: %d %s, want 201", res.Status, res.Body)
	}
}

func TestElicitationsOfANoneSessionAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_quiet", map[string]any{"questionCapability": "none"})
	events := h.openStream("/event")
	events.expect(t, "server.connected")

	for _, path := range []string{"/elicitations", "/elicit"} {
		res := h.do(http.MethodPost, path, askingForm("ses_quiet"))
		wantStatusError(t, "POST "+path+" for a none session", res, http.StatusForbidden, "Forbidden")
		if !strings.Contains(string(res.Body), "ses_quiet") {
			t.Errorf("POST %s: %s does not name the session", path, res.Body)
		}
	}
	// Also in MCP's envelope, on both routes.
	envelope := map[string]any{"method": "elicitation/create", "params": askingForm("ses_quiet")}
	wantStatusError(t, "POST /elicitations, envelope", h.do(http.MethodPost, "/elicitations", envelope), http.StatusForbidden, "Forbidden")

	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 0 {
		t.Errorf("%d questions stored for a none session", n)
	}
	var listed []any
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 0 {
		t.Errorf("GET /question lists %v", listed)
	}
	// Nothing was announced: the next event is a sentinel's.
	sentinel := h.create(askingForm("ses_loud")).ID
	if got := askedID(t, events.expect(t, "question.asked")); got != sentinel {
		t.Errorf("first event after the refusals is for %s, want the sentinel %s", got, sentinel)
	}
}

func TestElicitationsOfAParentSessionAreListedUnderTheParent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_child", map[string]any{"questionCapability": "parent", "parentSessionID": "ses_root"})
	events := h.openStream("/event")
	events.expect(t, "server.connected")

	res := h.do(http.MethodPost, "/elicitations", askingForm("ses_child"))
	var view struct {
		created
		AskingSessionID string `json:"askingSessionID"`
	}
	res.json(t, &view)
	if res.Status != http.StatusCreated || view.SessionID != "ses_root" || view.AskingSessionID != "ses_child" {
		t.Fatalf("POST /elicitations for the child: %d %s, want 201 under ses_root asked by ses_child", res.Status, res.Body)
	}
	id := view.ID
	var asked struct{ ID, SessionID string }
	f := events.expect(t, "question.asked")
	_ = json.Unmarshal(f.Properties, &asked)
	if asked.ID != id || asked.SessionID != "ses_root" {
		t.Errorf("question.asked %+v, want %s under ses_root", asked, id)
	}
	if strings.Contains(f.Raw, "askingSessionID") {
		t.Errorf("question.asked %s has a field OpenCode's QuestionRequest does not", f.Raw)
	}
	var listed []map[string]any
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 1 || listed[0]["sessionID"] != "ses_root" || listed[0]["askingSessionID"] != nil {
		t.Errorf("GET /question: %v, want the question under ses_root only", listed)
	}
	res = h.do(http.MethodGet, "/elicitations/"+id, nil)
	res.json(t, &view)
	if view.SessionID != "ses_root" || view.AskingSessionID != "ses_child" || view.Status != "pending" {
		t.Errorf("GET /elicitations/%s: %s", id, res.Body)
	}

	// The operator answers under the parent; the child's agent gets the result.
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", replyBody); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	var replied struct{ SessionID, RequestID string }
	_ = json.Unmarshal(events.expect(t, "question.replied").Properties, &replied)
	if replied.RequestID != id || replied.SessionID != "ses_root" {
		t.Errorf("question.replied %+v, want %s under ses_root", replied, id)
	}
	res = h.do(http.MethodGet, "/elicitations/"+id+"?wait=5s", nil)
	res.json(t, &view)
	if view.Status != "resolved" || view.Result == nil || view.Result.Action != "accept" || view.Result.Content["model"] != "SY215C" || view.AskingSessionID != "ses_child" {
		t.Errorf("the child's result: %s", res.Body)
	}

	// POST /elicit waits for the answer given under the parent.
	done := make(chan response, 1)
	go func() {
		res, err := h.request(http.MethodPost, "/elicit", askingForm("ses_child"))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &asked)
	if asked.SessionID != "ses_root" {
		t.Errorf("POST /elicit announced under %q, want ses_root", asked.SessionID)
	}
	if res := h.do(http.MethodPost, "/question/"+asked.ID+"/reply", `{"answers":[["SY365H"],[]]}`); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	select {
	case res := <-done:
		if res.Status != http.StatusOK || strings.TrimSpace(string(res.Body)) != `{"action":"accept","content":{"model":"SY365H"}}` {
			t.Errorf("POST /elicit for the child: %d %s", res.Status, res.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("POST /elicit did not return after the reply")
	}
}

func TestDefaultNoneRegistryRefusesUnconfiguredSessions(t *testing.T) {
	t.Parallel()
	registry, err := session.Open(context.Background(), session.Options{Default: session.None})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, httpapi.Options{Sessions: registry})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	for _, sessionID := range []string{"", "ses_unknown"} {
		for _, path := range []string{"/elicitations", "/elicit"} {
			wantStatusError(t, "POST "+path+" for session "+sessionID, h.do(http.MethodPost, path, askingForm(sessionID)), http.StatusForbidden, "Forbidden")
		}
	}
	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 0 {
		t.Errorf("%d questions stored", n)
	}
	putSession(t, h, "ses_allowed", map[string]any{"questionCapability": "user"})
	allowed := h.create(askingForm("ses_allowed"))
	if got := askedID(t, events.expect(t, "question.asked")); got != allowed.ID {
		t.Errorf("first event is %s, want the allowed session's %s", got, allowed.ID)
	}
}
