package httpapi_test

// The operator console: the routes the OpenCode TUI needs to attach, through
// real HTTP: sessions and their history are projections of the store. The
// fields the TUI (1.18.33) reads are held by console_contract_test.go.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// console is a questiond with operator and agent credentials, and the
// operator's side of the console routes.
type console struct {
	t *testing.T
	h *harness
}

func newConsole(t *testing.T, tu tuning) *console {
	t.Helper()
	if tu.api.Auth.OperatorPassword == "" && tu.api.Auth.AgentTokens == nil {
		tu.api.Auth = authBoth()
	}
	return &console{t: t, h: newHarnessWith(t, tu, zaptest.NewLogger(t))}
}

// ask creates a question as the agent with token (bearer; "" for none) and
// returns its id.
func (c *console) ask(token string, fields map[string]any) string {
	c.t.Helper()
	form := seedForm()
	for k, v := range fields {
		form[k] = v
	}
	headers := []string{}
	if token != "" {
		headers = append(headers, "Authorization", bearerAuth(token))
	}
	res := c.h.do(http.MethodPost, "/elicitations", form, headers...)
	if res.Status != http.StatusCreated {
		c.t.Fatalf("POST /elicitations: %d %s", res.Status, res.Body)
	}
	var q created
	res.json(c.t, &q)
	return q.ID
}

// get is an operator's GET that must answer 200 with JSON into v.
func (c *console) get(path string, v any) {
	c.t.Helper()
	res := c.h.do(http.MethodGet, path, nil, "Authorization", basicAuth("opencode", operatorPassword))
	if res.Status != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, res.Status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	res.json(c.t, v)
}

func (c *console) operator(method, path string, body any) response {
	c.t.Helper()
	return c.h.do(method, path, body, "Authorization", basicAuth("opencode", operatorPassword))
}

// consoleSessionView is what the TUI reads of a session.
type consoleSessionView struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	ProjectID string `json:"projectID"`
	Directory string `json:"directory"`
	Path      string `json:"path"`
	ParentID  string `json:"parentID"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Time      struct {
		Created int64 `json:"created"`
		Updated int64 `json:"updated"`
	} `json:"time"`
}

func (c *console) sessions(query string) []consoleSessionView {
	c.t.Helper()
	var list []consoleSessionView
	c.get("/session"+query, &list)
	return list
}

func titles(list []consoleSessionView) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Title
	}
	return out
}

// messageView is what the TUI reads of a message and its parts.
type messageView struct {
	Info struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
		Role      string `json:"role"`
		Time      struct {
			Created   int64  `json:"created"`
			Completed *int64 `json:"completed"`
		} `json:"time"`
		Agent      string          `json:"agent"`
		ModelID    string          `json:"modelID"`
		ProviderID string          `json:"providerID"`
		ParentID   string          `json:"parentID"`
		Finish     string          `json:"finish"`
		Cost       *float64        `json:"cost"`
		Tokens     json.RawMessage `json:"tokens"`
	} `json:"info"`
	Parts []struct {
		ID        string `json:"id"`
		MessageID string `json:"messageID"`
		Type      string `json:"type"`
		Text      string `json:"text"`
		Tool      string `json:"tool"`
		CallID    string `json:"callID"`
		State     struct {
			Status string `json:"status"`
			Input  struct {
				Questions []struct {
					Question string `json:"question"`
					Header   string `json:"header"`
					Options  []struct {
						Label string `json:"label"`
					} `json:"options"`
					Multiple bool `json:"multiple"`
				} `json:"questions"`
			} `json:"input"`
			Output   string `json:"output"`
			Error    string `json:"error"`
			Metadata struct {
				Answers [][]string `json:"answers"`
			} `json:"metadata"`
		} `json:"state"`
	} `json:"parts"`
}

func (c *console) messages(sessionID, query string) []messageView {
	c.t.Helper()
	var list []messageView
	c.get("/session/"+sessionID+"/message"+query, &list)
	return list
}

func TestConsoleSessionsAreTheStoresSessions(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{api: httpapi.Options{Version: "9.9.9", Auth: authBoth()}})
	long := strings.Repeat("é", 70)
	qa1 := c.ask(alphaToken, map[string]any{"sessionID": "ses_alpha", "directory": "/work/a", "message": "  Diagnose the machine\nIt smokes."})
	c.ask(betaToken, map[string]any{"sessionID": "ses_beta", "directory": "/work/b", "message": long})
	qa2 := c.ask(alphaToken, map[string]any{"sessionID": "ses_alpha", "directory": "/work/a", "message": "Second thought"})

	list := c.sessions("?roots=true&limit=100")
	wantLong := "beta: " + strings.Repeat("é", 59) + "…"
	if got := titles(list); !slices.Equal(got, []string{"[?] alpha: Diagnose the machine", "[?] " + wantLong}) {
		t.Fatalf("titles %q, want the pending marker, the owner and the first line, newest first", got)
	}
	a := list[0]
	if a.ID != "ses_alpha" || a.ProjectID != "global" || a.Directory != "/work/a" || a.Version != "9.9.9" || a.ParentID != "" ||
		a.Slug == "" || a.Time.Created == 0 || a.Time.Updated < a.Time.Created {
		t.Errorf("session %+v", a)
	}
	var one consoleSessionView
	c.get("/session/ses_alpha", &one)
	if one != a {
		t.Errorf("GET /session/ses_alpha = %+v, want the listed %+v", one, a)
	}
	var status map[string]struct{ Type string }
	c.get("/session/status", &status)
	if len(status) != 2 || status["ses_alpha"].Type != "busy" || status["ses_beta"].Type != "busy" {
		t.Errorf("GET /session/status = %v, want both busy", status)
	}

	// History while pending: one running question tool per question.
	msgs := c.messages("ses_alpha", "?limit=100")
	if len(msgs) != 2 {
		t.Fatalf("history of ses_alpha has %d messages, want 2", len(msgs))
	}
	m := msgs[0]
	if m.Info.Role != "assistant" || m.Info.SessionID != "ses_alpha" || m.Info.Agent != "questiond" || m.Info.ProviderID != "questiond" ||
		m.Info.ModelID != "operator-console" || m.Info.Time.Created == 0 || m.Info.Time.Completed != nil || m.Info.Cost == nil ||
		len(m.Info.Tokens) == 0 || m.Info.ParentID == "" || m.Info.Finish != "" {
		t.Errorf("pending message info %+v", m.Info)
	}
	if len(m.Parts) != 2 || m.Parts[0].Type != "text" || m.Parts[0].Text != "  Diagnose the machine\nIt smokes." ||
		m.Parts[1].Type != "tool" || m.Parts[1].Tool != "question" || m.Parts[1].CallID == "" || m.Parts[1].State.Status != "running" {
		t.Fatalf("pending message parts %+v", m.Parts)
	}
	if qs := m.Parts[1].State.Input.Questions; len(qs) != 2 || !strings.HasSuffix(qs[0].Question, "Equipment model? (pick one) (required)") || qs[0].Header != "Model" ||
		len(qs[0].Options) != 2 || qs[0].Options[0].Label != "SY215C" || !qs[1].Multiple {
		t.Errorf("tool input %+v, want the form's questions", qs)
	}
	ids := []string{msgs[0].Info.ID, msgs[0].Parts[0].ID, msgs[0].Parts[1].ID, msgs[1].Info.ID}
	if !slices.IsSorted([]string{msgs[0].Info.ID, msgs[1].Info.ID}) || !slices.IsSorted(ids[1:3]) || !strings.HasPrefix(ids[0], "msg_") {
		t.Errorf("ids %v do not ascend", ids)
	}
	for _, p := range m.Parts {
		if p.MessageID != m.Info.ID {
			t.Errorf("part %s belongs to %s, not %s", p.ID, p.MessageID, m.Info.ID)
		}
	}

	// The operator answers alpha's first question and dismisses its second.
	if res := c.operator(http.MethodPost, "/question/"+qa1+"/reply", map[string]any{"answers": [][]string{{"SY215C"}, {"Black smoke", "Low power"}}}); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	if res := c.operator(http.MethodPost, "/question/"+qa2+"/reject", nil); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	again := c.messages("ses_alpha", "")
	if len(again) != 2 || again[0].Info.ID != msgs[0].Info.ID || again[1].Parts[0].ID != msgs[1].Parts[0].ID {
		t.Fatalf("ids changed between calls: %+v then %+v", msgs, again)
	}
	done := again[0]
	tool := done.Parts[1].State
	if tool.Status != "completed" || !slices.Equal(tool.Metadata.Answers[1], []string{"Black smoke", "Low power"}) ||
		!strings.Contains(tool.Output, `"Select symptoms (pick any number)"="Black smoke, Low power"`) || done.Info.Time.Completed == nil || done.Info.Finish == "" {
		t.Errorf("answered question: %+v %+v", done.Info, tool)
	}
	if dismissed := again[1].Parts[1].State; dismissed.Status != "error" || dismissed.Error != "The user dismissed this question" {
		t.Errorf("dismissed question: %+v", dismissed)
	}
	if last := c.messages("ses_alpha", "?limit=1"); len(last) != 1 || last[0].Info.ID != again[1].Info.ID {
		t.Errorf("?limit=1 gave %d messages, want the newest", len(last))
	}

	// ses_alpha has ended everything: no marker, no longer busy, and
	// updated by its last ending, so it still lists first.
	list = c.sessions("")
	if got := titles(list); !slices.Equal(got, []string{"alpha: Diagnose the machine", "[?] " + wantLong}) {
		t.Errorf("titles after the answers: %q", got)
	}
	status = nil
	c.get("/session/status", &status)
	if len(status) != 1 || status["ses_beta"].Type != "busy" {
		t.Errorf("GET /session/status = %v, want only ses_beta busy", status)
	}

	// The TUI's queries.
	if got := titles(c.sessions("?search=DIAGNOSE")); !slices.Equal(got, []string{"alpha: Diagnose the machine"}) {
		t.Errorf("search: %q", got)
	}
	if got := c.sessions("?limit=1"); len(got) != 1 || got[0].ID != "ses_alpha" {
		t.Errorf("limit=1: %+v", got)
	}
	if got := c.sessions(fmt.Sprintf("?start=%d", list[0].Time.Updated)); len(got) != 1 || got[0].ID != "ses_alpha" {
		t.Errorf("start=<alpha's update>: %+v, want only ses_alpha", got)
	}
	if got := c.sessions("?start=0&path="); len(got) != 2 {
		t.Errorf("start=0: %d sessions", len(got))
	}
	// Directory scoping as GET /question has it.
	if got := c.sessions("?directory=" + url.QueryEscape("/work/b/")); len(got) != 1 || got[0].ID != "ses_beta" {
		t.Errorf("directory=/work/b/: %+v", got)
	}
	res := c.h.do(http.MethodGet, "/session/ses_beta", nil, "Authorization", basicAuth("opencode", operatorPassword), "x-opencode-directory", "/work/a")
	wantStatusError(t, "GET /session/ses_beta from /work/a", res, http.StatusNotFound, "NotFoundError")
}

func TestConsoleTitleWithoutTokens(t *testing.T) {
	t.Parallel()
	c := &console{t: t, h: newHarness(t, httpapi.Options{})}
	c.ask("", map[string]any{"sessionID": "ses_plain", "message": "\n  Which database?  \nDetails follow"})
	var list []consoleSessionView
	res := c.h.do(http.MethodGet, "/session", nil)
	res.json(t, &list)
	if res.Status != http.StatusOK || len(list) != 1 || list[0].Title != "[?] Which database?" || list[0].Directory != "" ||
		list[0].ID != "ses_plain" {
		t.Errorf("GET /session without tokens: %d %s", res.Status, res.Body)
	}
}

func TestConsoleSessionsFollowRetention(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{store: pending.Options{MaxRetained: 1}})
	first := c.ask(alphaToken, map[string]any{"sessionID": "ses_first"})
	second := c.ask(alphaToken, map[string]any{"sessionID": "ses_second"})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_second"})
	for _, id := range []string{first, second} {
		if res := c.operator(http.MethodPost, "/question/"+id+"/reject", nil); res.Status != http.StatusOK {
			t.Fatalf("reject %s: %d %s", id, res.Status, res.Body)
		}
	}
	// One result is retained: ses_first's went when ses_second's ended.
	list := c.sessions("")
	if len(list) != 1 || list[0].ID != "ses_second" {
		t.Errorf("sessions %+v, want only ses_second", list)
	}
	if msgs := c.messages("ses_second", ""); len(msgs) != 2 || msgs[0].Parts[1].State.Status != "error" || msgs[1].Parts[1].State.Status != "running" {
		t.Errorf("ses_second's history: %+v", msgs)
	}
	res := c.operator(http.MethodGet, "/session/ses_first", nil)
	wantStatusError(t, "GET /session/ses_first after its result was evicted", res, http.StatusNotFound, "NotFoundError")
	if !strings.Contains(string(res.Body), "ses_first") {
		t.Errorf("404 body %s does not name the session", res.Body)
	}
	res = c.operator(http.MethodGet, "/session/ses_first/message", nil)
	wantStatusError(t, "GET /session/ses_first/message", res, http.StatusNotFound, "NotFoundError")
}

func TestConsoleRefusesPrompts(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_alpha"})
	prompt := map[string]any{"agent": "questiond", "model": map[string]string{"providerID": "questiond", "modelID": "operator-console"},
		"parts": []map[string]string{{"type": "text", "text": "hello"}}}
	for _, path := range []string{"/session", "/session/ses_alpha/message", "/session/ses_unknown/message"} {
		res := c.operator(http.MethodPost, path, prompt)
		var body struct {
			Name string
			Data struct{ Message string }
		}
		res.json(t, &body)
		if res.Status != http.StatusBadRequest || body.Name != "BadRequest" ||
			body.Data.Message != "this console answers agents' questions; it does not run an agent" {
			t.Errorf("POST %s: %d %s", path, res.Status, res.Body)
		}
	}
	if msgs := c.messages("ses_alpha", ""); len(msgs) != 1 {
		t.Errorf("a refused prompt changed the history: %d messages", len(msgs))
	}
}

func TestConsoleRejectsBadQueries(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	for _, path := range []string{"/session?limit=x", "/session?limit=0", "/session?start=-1", "/session/ses_a/message?limit=-2"} {
		wantStatusError(t, "GET "+path, c.operator(http.MethodGet, path, nil), http.StatusBadRequest, "BadRequest")
	}
}

// A session whose questions come from several directories shows none, so
// the TUI's replies, sent with the session's directory, reach every one.
func TestConsoleSessionDirectoryIsTheSharedOne(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_one", "directory": "/work/a"})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_one", "directory": "/work/a/"})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_mixed", "directory": "/work/a"})
	second := c.ask(alphaToken, map[string]any{"sessionID": "ses_mixed", "directory": "/work/b"})
	var one, mixed consoleSessionView
	c.get("/session/ses_one", &one)
	c.get("/session/ses_mixed", &mixed)
	if one.Directory != "/work/a" || mixed.Directory != "" {
		t.Errorf("directories %q and %q, want /work/a and \"\"", one.Directory, mixed.Directory)
	}
	path := "/question/" + second + "/reply?directory=" + url.QueryEscape(mixed.Directory)
	if res := c.operator(http.MethodPost, path, map[string]any{"answers": [][]string{{"SY215C"}, {}}}); res.Status != http.StatusOK {
		t.Errorf("reply with the session's directory: %d %s", res.Status, res.Body)
	}
}
