package httpapi_test

// A session belongs to the agent that first configured it, asked in it or
// named it as a parent: no other agent can configure it, remove it, ask in
// it or ask through it, whatever the order of their requests, across
// restarts and across replicas. Operators may change any session. The
// refusals are 403s whose message names the field that named the session.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/session"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testserver"
)

// bravoToken is the second agent of the ownership tests, as in issue 22's
// repros.
const bravoToken = "bravo-token-Hs42kP9wQe3mV"

func authAlphaBravo() httpapi.Auth {
	return httpapi.Auth{OperatorPassword: operatorPassword, AgentTokens: map[string]string{"alpha": alphaToken, "bravo": bravoToken}}
}

// party sends requests with one set of credentials.
type party struct {
	h    *harness
	auth string
}

func (h *harness) as(auth string) party { return party{h, auth} }

func alphaOn(h *harness) party    { return h.as(bearerAuth(alphaToken)) }
func bravoOn(h *harness) party    { return h.as(bearerAuth(bravoToken)) }
func operatorOn(h *harness) party { return h.as(basicAuth("opencode", operatorPassword)) }

func (p party) put(id, body string) response {
	p.h.t.Helper()
	return p.h.do(http.MethodPut, "/sessions/"+id, body, "Authorization", p.auth)
}

func (p party) delete(id string) response {
	p.h.t.Helper()
	return p.h.do(http.MethodDelete, "/sessions/"+id, nil, "Authorization", p.auth)
}

func (p party) get(id string) response {
	p.h.t.Helper()
	return p.h.do(http.MethodGet, "/sessions/"+id, nil, "Authorization", p.auth)
}

// ask asks the repros' one-string question in sessionID ("": without a
// session, in the agent's inbox).
func (p party) ask(sessionID string) response {
	p.h.t.Helper()
	body := map[string]any{"message": "m", "requestedSchema": json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}
	if sessionID != "" {
		body["sessionID"] = sessionID
	}
	return p.h.do(http.MethodPost, "/elicitations", body, "Authorization", p.auth)
}

// asked is ask that must succeed; it returns the session the question is
// listed under.
func (p party) asked(sessionID string) string {
	p.h.t.Helper()
	res := p.ask(sessionID)
	if res.Status != http.StatusCreated {
		p.h.t.Fatalf("asking in %q: %d %s, want 201", sessionID, res.Status, res.Body)
	}
	var c created
	res.json(p.h.t, &c)
	return c.SessionID
}

func parentBody(parent string) string {
	return `{"questionCapability":"parent","parentSessionID":"` + parent + `"}`
}

// wantOwned checks a refusal: 403 Forbidden whose message names field the
// way a 400 does (at ["field"]) and says each of says.
func wantOwned(t *testing.T, req string, res response, field string, says ...string) {
	t.Helper()
	var body struct {
		Name string
		Data struct{ Message string }
	}
	if res.Status != http.StatusForbidden || json.Unmarshal(res.Body, &body) != nil || body.Name != "Forbidden" {
		t.Errorf("%s: %d %s, want a 403 Forbidden", req, res.Status, res.Body)
		return
	}
	for _, want := range append([]string{`at ["` + field + `"]`}, says...) {
		if !strings.Contains(body.Data.Message, want) {
			t.Errorf("%s: message %q does not say %q", req, body.Data.Message, want)
		}
	}
}

func wantStatus(t *testing.T, req string, res response, status int) {
	t.Helper()
	if res.Status != status {
		t.Errorf("%s: %d %s, want %d", req, res.Status, res.Body, status)
	}
}

// serveWith starts a questiond with cfg, agents alpha and bravo and the
// operator's password, stopped when the test ends.
func serveWith(t *testing.T, cfg testserver.Config) (*harness, *testserver.Server) {
	t.Helper()
	cfg.API.Auth = authAlphaBravo()
	cfg.Events = sse.Options{Heartbeat: time.Hour}
	cfg.Logger = zaptest.NewLogger(t)
	srv, err := testserver.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return &harness{t: t, URL: srv.URL, store: srv.Store, api: srv.API}, srv
}

// Issue 22, item 1: bravo could list its questions under alpha's inbox, or
// any of alpha's sessions, by naming it as the parent of a session of its
// own.
func TestAParentSessionMustBeTheSameAgents(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{api: httpapi.Options{Auth: authAlphaBravo()}})
	alpha, bravo := alphaOn(c.h), bravoOn(c.h)
	inbox := alpha.asked("")

	wantOwned(t, "bravo's child of alpha's inbox", bravo.put("ses_bchild", parentBody(inbox)), "parentSessionID", "inbox", "cannot be a parent")
	if got := bravo.asked("ses_bchild"); got != "ses_bchild" {
		t.Errorf("bravo's question in its refused child is listed under %s, want ses_bchild", got)
	}
	// The same with alpha's ordinary sessions: one alpha asked in, one it
	// configured.
	alpha.asked("ses_alpha1")
	wantStatus(t, "alpha's PUT of ses_alpha2", alpha.put("ses_alpha2", `{"questionCapability":"user"}`), http.StatusCreated)
	for _, parent := range []string{"ses_alpha1", "ses_alpha2"} {
		wantOwned(t, "bravo's child of "+parent, bravo.put("ses_bchild", parentBody(parent)), "parentSessionID", "belongs to agent alpha")
	}
	if got := bravo.asked("ses_bchild"); got != "ses_bchild" {
		t.Errorf("bravo's second question is listed under %s, want ses_bchild", got)
	}
	// The operator's console shows alpha's sessions with alpha's questions
	// only, and no session of bravo's under them.
	for _, id := range []string{inbox, "ses_alpha1"} {
		if msgs := c.messages(id, ""); len(msgs) != 1 {
			t.Errorf("the console lists %d questions under alpha's %s, want alpha's one", len(msgs), id)
		}
	}
	for _, s := range c.sessions("") {
		if s.ParentID != "" {
			t.Errorf("the console lists %s under %s", s.ID, s.ParentID)
		}
	}

	// An inbox is nobody's parent, not even its own agent's.
	wantOwned(t, "alpha's child of its own inbox", alpha.put("ses_achild", parentBody(inbox)), "parentSessionID", "cannot be a parent")
	// Alpha keeps full control of its own: a child of its session, and of a
	// session nobody used yet, which becomes alpha's.
	wantStatus(t, "alpha's child of ses_alpha1", alpha.put("ses_achild", parentBody("ses_alpha1")), http.StatusCreated)
	if got := alpha.asked("ses_achild"); got != "ses_alpha1" {
		t.Errorf("alpha's child's question is listed under %s, want ses_alpha1", got)
	}
	wantStatus(t, "alpha's child of an unused session", alpha.put("ses_achild2", parentBody("ses_fresh")), http.StatusCreated)
	wantOwned(t, "bravo's PUT of the parent alpha named", bravo.put("ses_fresh", `{"questionCapability":"none"}`), "sessionID", "belongs to agent alpha")
	wantOwned(t, "bravo asking in the parent alpha named", bravo.ask("ses_fresh"), "sessionID", "belongs to agent alpha")
	wantOwned(t, "bravo's child of the parent alpha named", bravo.put("ses_bchild", parentBody("ses_fresh")), "parentSessionID", "belongs to agent alpha")
	if got := alpha.asked("ses_achild2"); got != "ses_fresh" {
		t.Errorf("alpha's second child's question is listed under %s, want ses_fresh", got)
	}
}

// Issue 22, item 2: bravo could take a session alpha asked in but never
// configured, and lock alpha out of it.
func TestASessionIsTheAgentsThatAskedInIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authAlphaBravo()})
	alpha, bravo := alphaOn(h), bravoOn(h)
	alpha.asked("ses_alpha1")

	wantOwned(t, "bravo's PUT", bravo.put("ses_alpha1", `{"questionCapability":"none"}`), "sessionID", "ses_alpha1 belongs to agent alpha")
	wantOwned(t, "bravo's DELETE", bravo.delete("ses_alpha1"), "sessionID", "belongs to agent alpha")
	wantOwned(t, "bravo asking in it", bravo.ask("ses_alpha1"), "sessionID", "belongs to agent alpha")
	wantSessionBody(t, "GET after bravo's refusals", bravo.get("ses_alpha1"), http.StatusOK, `{"id":"ses_alpha1","questionCapability":"user","configured":false}`)

	// Alpha keeps full control.
	alpha.asked("ses_alpha1")
	wantStatus(t, "alpha's PUT none", alpha.put("ses_alpha1", `{"questionCapability":"none"}`), http.StatusCreated)
	wantStatusError(t, "alpha asking in its none session", alpha.ask("ses_alpha1"), http.StatusForbidden, "Forbidden")
	wantStatus(t, "alpha's PUT user", alpha.put("ses_alpha1", `{"questionCapability":"user"}`), http.StatusOK)
	wantStatus(t, "alpha's DELETE", alpha.delete("ses_alpha1"), http.StatusOK)
	// Removing the configuration leaves the session alpha's: it holds
	// alpha's questions.
	wantOwned(t, "bravo's PUT after alpha's DELETE", bravo.put("ses_alpha1", `{"questionCapability":"none"}`), "sessionID", "belongs to agent alpha")
	alpha.asked("ses_alpha1")
}

// Whoever comes first owns the session: bravo's PUT racing alpha's first
// question never lets both succeed.
func TestAPutRacingAFirstQuestionHasOneWinner(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authAlphaBravo()})
	alpha, bravo := alphaOn(h), bravoOn(h)
	wins := map[string]int{}
	for round := range 40 {
		id := fmt.Sprintf("ses_race%d", round)
		var asked, put response
		var wg sync.WaitGroup
		wg.Go(func() {
			asked, _ = h.request(http.MethodPost, "/elicitations", askingForm(id), "Authorization", alpha.auth)
		})
		wg.Go(func() {
			put, _ = h.request(http.MethodPut, "/sessions/"+id, `{"questionCapability":"none"}`, "Authorization", bravo.auth)
		})
		wg.Wait()
		switch {
		case asked.Status == http.StatusCreated && put.Status == http.StatusForbidden:
			wins["alpha"]++
			wantOwned(t, "bravo's PUT after alpha asked", bravo.put(id, `{"questionCapability":"user"}`), "sessionID", "belongs to agent alpha")
		case put.Status == http.StatusCreated && asked.Status == http.StatusForbidden:
			wins["bravo"]++
			wantOwned(t, "alpha's PUT after bravo's", alpha.put(id, `{"questionCapability":"user"}`), "sessionID", "belongs to agent bravo")
		default:
			t.Fatalf("%s: alpha's question %d %s, bravo's PUT %d %s; want exactly one of them to win", id, asked.Status, asked.Body, put.Status, put.Body)
		}
	}
	t.Logf("wins: %v", wins)
}

// Operators may reconfigure and remove any session, an agent's included;
// the session stays its agent's.
func TestOperatorsMayChangeAnySession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authAlphaBravo()})
	alpha, bravo, operator := alphaOn(h), bravoOn(h), operatorOn(h)
	inbox := alpha.asked("")
	alpha.asked("ses_alpha1")
	wantStatus(t, "bravo's PUT of its own", bravo.put("ses_b", `{"questionCapability":"none"}`), http.StatusCreated)

	wantSessionBody(t, "the operator's PUT of alpha's session", operator.put("ses_alpha1", `{"questionCapability":"none"}`),
		http.StatusCreated, `{"id":"ses_alpha1","questionCapability":"none","configured":true}`)
	wantStatusError(t, "alpha asking once the operator set none", alpha.ask("ses_alpha1"), http.StatusForbidden, "Forbidden")
	wantOwned(t, "bravo's PUT after the operator's", bravo.put("ses_alpha1", `{"questionCapability":"user"}`), "sessionID", "belongs to agent alpha")
	wantSessionBody(t, "the operator's GET", operator.get("ses_alpha1"), http.StatusOK, `{"id":"ses_alpha1","questionCapability":"none","configured":true}`)
	wantStatus(t, "the operator's DELETE of alpha's session", operator.delete("ses_alpha1"), http.StatusOK)
	alpha.asked("ses_alpha1")

	wantStatus(t, "the operator's PUT of bravo's session", operator.put("ses_b", `{"questionCapability":"user"}`), http.StatusOK)
	wantStatus(t, "bravo's DELETE of its session after the operator's PUT", bravo.delete("ses_b"), http.StatusOK)

	wantStatus(t, "the operator's PUT of alpha's inbox", operator.put(inbox, `{"questionCapability":"none"}`), http.StatusCreated)
	wantStatusError(t, "alpha asking without a session once its inbox is none", alpha.ask(""), http.StatusForbidden, "Forbidden")
	wantStatus(t, "the operator's DELETE of alpha's inbox", operator.delete(inbox), http.StatusOK)
	alpha.asked("")

	// A session the operator configured first is the operator's to
	// configure; agents may still ask in it.
	wantStatus(t, "the operator's PUT of a new session", operator.put("ses_op", `{"questionCapability":"user"}`), http.StatusCreated)
	wantStatusError(t, "alpha's PUT of the operator's session", alpha.put("ses_op", `{"questionCapability":"none"}`), http.StatusForbidden, "Forbidden")
	alpha.asked("ses_op")
	bravo.asked("ses_op")

	// Operators still ask nothing.
	wantStatusError(t, "the operator asking", operator.ask("ses_op"), http.StatusForbidden, "Forbidden")
}

// Ownership is kept with the session records: a restart (bbolt) forgets
// nothing of it.
func TestSessionOwnershipSurvivesARestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "questiond.db")
	start := func() (*harness, *testserver.Server) {
		return serveWith(t, testserver.Config{BoltPath: path})
	}
	first, srv := start()
	alphaOn(first).asked("ses_alpha1")
	wantStatus(t, "alpha's child of an unused session", alphaOn(first).put("ses_achild", parentBody("ses_fresh")), http.StatusCreated)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	second, _ := start()
	alpha, bravo := alphaOn(second), bravoOn(second)
	wantOwned(t, "bravo's PUT after a restart", bravo.put("ses_alpha1", `{"questionCapability":"none"}`), "sessionID", "belongs to agent alpha")
	wantOwned(t, "bravo's PUT of alpha's parent after a restart", bravo.put("ses_fresh", `{"questionCapability":"none"}`), "sessionID", "belongs to agent alpha")
	wantOwned(t, "bravo's DELETE of alpha's child after a restart", bravo.delete("ses_achild"), "sessionID", "belongs to agent alpha")
	wantStatus(t, "alpha's PUT after a restart", alpha.put("ses_alpha1", `{"questionCapability":"none"}`), http.StatusCreated)
	if got := alpha.asked("ses_achild"); got != "ses_fresh" {
		t.Errorf("alpha's child's question is listed under %s, want ses_fresh", got)
	}
}

// On PostgreSQL the rule holds across replicas: what one replica's agent
// claimed, the other's cannot take, and a race between them has one winner.
func TestSessionOwnershipHoldsAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a, _ := serveWith(t, testserver.Config{DatabaseURL: url})
	b, _ := serveWith(t, testserver.Config{DatabaseURL: url})
	alphaOn(a).asked("ses_alpha1")
	wantOwned(t, "bravo's PUT on the other replica", bravoOn(b).put("ses_alpha1", `{"questionCapability":"none"}`), "sessionID", "belongs to agent alpha")
	wantOwned(t, "bravo asking on the other replica", bravoOn(b).ask("ses_alpha1"), "sessionID", "belongs to agent alpha")
	wantStatus(t, "alpha's child of an unused session", alphaOn(b).put("ses_achild", parentBody("ses_fresh")), http.StatusCreated)
	wantOwned(t, "bravo's child of alpha's parent", bravoOn(a).put("ses_bchild", parentBody("ses_fresh")), "parentSessionID", "belongs to agent alpha")
	wantOwned(t, "bravo asking in alpha's parent", bravoOn(a).ask("ses_fresh"), "sessionID", "belongs to agent alpha")
	if got := alphaOn(a).asked("ses_achild"); got != "ses_fresh" {
		t.Errorf("alpha's child's question is listed under %s, want ses_fresh", got)
	}
	wantStatus(t, "the operator's PUT on the other replica", operatorOn(b).put("ses_alpha1", `{"questionCapability":"none"}`), http.StatusCreated)
	wantStatus(t, "alpha's DELETE on the first", alphaOn(a).delete("ses_alpha1"), http.StatusOK)
	wantOwned(t, "bravo's PUT after alpha's DELETE", bravoOn(b).put("ses_alpha1", `{"questionCapability":"none"}`), "sessionID", "belongs to agent alpha")

	for round := range 20 {
		id := fmt.Sprintf("ses_race%d", round)
		var asked, put response
		var wg sync.WaitGroup
		wg.Go(func() {
			asked, _ = a.request(http.MethodPost, "/elicitations", askingForm(id), "Authorization", bearerAuth(alphaToken))
		})
		wg.Go(func() {
			put, _ = b.request(http.MethodPut, "/sessions/"+id, `{"questionCapability":"none"}`, "Authorization", bearerAuth(bravoToken))
		})
		wg.Wait()
		if (asked.Status == http.StatusCreated) == (put.Status == http.StatusCreated) {
			t.Fatalf("%s: alpha's question on A %d %s, bravo's PUT on B %d %s; want exactly one to win", id, asked.Status, asked.Body, put.Status, put.Body)
		}
	}
}

// --max-sessions-per-agent bounds one agent's records; another agent can
// still configure its own, and --max-sessions stays the total.
func TestMaxSessionsPerAgentIs429NamingTheFlag(t *testing.T) {
	t.Parallel()
	registry, err := session.Open(t.Context(), session.Options{MaxSessions: 10, MaxSessionsPerAgent: 3})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, httpapi.Options{Auth: authAlphaBravo(), Sessions: registry})
	alpha, bravo := alphaOn(h), bravoOn(h)
	for i := range 3 {
		wantStatus(t, "bravo's PUT", bravo.put(fmt.Sprintf("ses_b%d", i), `{"questionCapability":"none"}`), http.StatusCreated)
	}
	res := bravo.put("ses_b3", `{"questionCapability":"none"}`)
	expectNamed(t, res, http.StatusTooManyRequests, "TooManyRequests")
	if !strings.Contains(string(res.Body), "--max-sessions-per-agent") {
		t.Errorf("the 429 does not name the flag: %s", res.Body)
	}
	// A parent a PUT claims takes a place too.
	expectNamed(t, bravo.put("ses_b0", parentBody("ses_bparent")), http.StatusTooManyRequests, "TooManyRequests")
	// Replacing takes no new room; questions claim sessions without room.
	wantStatus(t, "bravo replacing its own", bravo.put("ses_b0", `{"questionCapability":"user"}`), http.StatusOK)
	for i := range 5 {
		bravo.asked(fmt.Sprintf("ses_basked%d", i))
	}
	for i := range 3 {
		wantStatus(t, "alpha's PUT", alpha.put(fmt.Sprintf("ses_a%d", i), `{"questionCapability":"none"}`), http.StatusCreated)
	}
	wantStatus(t, "bravo's DELETE", bravo.delete("ses_b1"), http.StatusOK)
	wantStatus(t, "bravo's PUT once it made room", bravo.put("ses_b3", `{"questionCapability":"none"}`), http.StatusCreated)
	// The total still holds: 3 of bravo's, 3 of alpha's, and 4 of the
	// operator's fill it.
	for i := range 4 {
		wantStatus(t, "the operator's PUT", operatorOn(h).put(fmt.Sprintf("ses_op%d", i), `{"questionCapability":"none"}`), http.StatusCreated)
	}
	res = alpha.put("ses_a3", `{"questionCapability":"none"}`)
	expectNamed(t, res, http.StatusTooManyRequests, "TooManyRequests")
	if !strings.Contains(string(res.Body), "--max-sessions)") {
		t.Errorf("the 429 at the total does not name --max-sessions: %s", res.Body)
	}
}

// Questions asked before sessions were claimed (an earlier version kept no
// claim; here, a registry that forgot them across a restart) still make
// their session their agent's: another agent cannot configure it, nor name
// it as a parent.
func TestASessionHoldingAnotherAgentsQuestionsIsTheirs(t *testing.T) {
	t.Parallel()
	journal, err := pending.OpenBolt(filepath.Join(t.TempDir(), "questions.db"), pending.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = journal.Close() })
	first, srv := serveWith(t, testserver.Config{Journal: journal}) // session records in memory
	alphaOn(first).asked("ses_old")
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	h, _ := serveWith(t, testserver.Config{Journal: journal})
	wantSessionBody(t, "GET of a session whose claim was lost", alphaOn(h).get("ses_old"), http.StatusOK, `{"id":"ses_old","questionCapability":"user","configured":false}`)
	wantOwned(t, "bravo's PUT", bravoOn(h).put("ses_old", `{"questionCapability":"none"}`), "sessionID", "belongs to agent alpha")
	wantOwned(t, "bravo's child of it", bravoOn(h).put("ses_bchild", parentBody("ses_old")), "parentSessionID", "belongs to agent alpha")
	wantStatus(t, "alpha's PUT", alphaOn(h).put("ses_old", `{"questionCapability":"none"}`), http.StatusCreated)
}

// The MCP tools follow the same rule: bravo's MCP session bound to alpha's
// session asks nothing there, and alpha's own still asks.
func TestMCPToolsAskOnlyInTheAgentsOwnSessions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authAlphaBravo()})
	alphaOn(h).asked("ses_alpha1")
	bravo := mcpConnect(t, h, "/mcp?session=ses_alpha1", map[string]string{"Authorization": bearerAuth(bravoToken)}, nil)
	call := callNow(t, bravo, "ask_user_question", twoPrompts())
	if call.err != nil || call.res == nil || !call.res.IsError || !strings.Contains(toolText(call.res), "belongs to agent alpha") {
		t.Errorf("bravo's tool call in alpha's session: %+v, %v; want a tool error naming alpha", call.res, call.err)
	}
	if listed := h.do(http.MethodGet, "/question", nil, "Authorization", basicAuth("opencode", operatorPassword)); strings.Count(string(listed.Body), `"id":"que_`) != 1 {
		t.Errorf("questions listed after bravo's refused call: %s; want alpha's one", listed.Body)
	}
}
