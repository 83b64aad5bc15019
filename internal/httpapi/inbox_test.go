package httpapi_test

// Questions asked without a sessionID go to their agent's inbox: one session
// per agent, the same in every process, so the console lists one session per
// agent rather than one per question.

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
)

// openCodeSessionID is the shape of OpenCode's own session ids.
var openCodeSessionID = regexp.MustCompile(`^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$`)

// sessionOf is the session the agent with token sees question id under.
func (c *console) sessionOf(token, id string) string {
	c.t.Helper()
	res := c.h.do(http.MethodGet, "/elicitations/"+id, nil, "Authorization", bearerAuth(token))
	if res.Status != http.StatusOK {
		c.t.Fatalf("GET /elicitations/%s: %d %s", id, res.Status, res.Body)
	}
	var q created
	res.json(c.t, &q)
	return q.SessionID
}

func TestQuestionsWithoutASessionGoToTheirAgentsInbox(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	first := c.sessionOf(alphaToken, c.ask(alphaToken, nil))
	second := c.sessionOf(alphaToken, c.ask(alphaToken, map[string]any{"message": "Another thing"}))
	// POST /elicit (questiond ask) files its question there too; it times
	// out at once, which leaves it in the history.
	form := seedForm()
	form["timeout"] = "1ms"
	res := c.h.do(http.MethodPost, "/elicit", form, "Authorization", bearerAuth(alphaToken))
	if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"cancel"`) {
		t.Fatalf("POST /elicit: %d %s", res.Status, res.Body)
	}
	third := c.sessionOf(alphaToken, res.Header.Get("X-Questiond-Request-Id"))
	beta := c.sessionOf(betaToken, c.ask(betaToken, nil))
	if !openCodeSessionID.MatchString(first) || first != second || first != third {
		t.Fatalf("alpha's questions went to %q, %q and %q, want one session shaped like OpenCode's", first, second, third)
	}
	if !openCodeSessionID.MatchString(beta) || beta == first {
		t.Fatalf("beta's question went to %q, want its own inbox, not alpha's %q", beta, first)
	}

	// Another questiond (a restart, a replica) files alpha's questions
	// under the same session.
	other := newConsole(t, tuning{})
	if again := other.sessionOf(alphaToken, other.ask(alphaToken, nil)); again != first {
		t.Errorf("another questiond filed alpha's question under %q, want %q", again, first)
	}

	// The console lists one session per agent, named for it.
	list := c.sessions("")
	slices.SortFunc(list, func(a, b consoleSessionView) int { return strings.Compare(a.Title, b.Title) })
	if got := titles(list); !slices.Equal(got, []string{"[?] alpha: questions asked without a session", "[?] beta: questions asked without a session"}) {
		t.Fatalf("titles %q, want one inbox per agent", got)
	}
	if list[0].ID != first || list[1].ID != beta {
		t.Errorf("sessions %+v, want alpha's and beta's inboxes", list)
	}
	msgs := c.messages(first, "")
	if len(msgs) != 3 || msgs[1].Parts[0].Text != "Another thing" || msgs[2].Parts[len(msgs[2].Parts)-2].State.Status != "error" {
		t.Errorf("alpha's inbox holds %+v, want its three questions, oldest first", msgs)
	}
}

func TestAnonymousAgentsShareOneInbox(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	a, b := h.create(seedForm()), h.create(seedForm())
	if a.SessionID != b.SessionID || !openCodeSessionID.MatchString(a.SessionID) {
		t.Fatalf("questions without a session went to %q and %q, want one inbox", a.SessionID, b.SessionID)
	}
	var list []consoleSessionView
	h.do(http.MethodGet, "/session", nil).json(t, &list)
	if len(list) != 1 || list[0].ID != a.SessionID || list[0].Title != "[?] Questions asked without a session" {
		t.Errorf("GET /session = %+v, want the one inbox", list)
	}
}

// The inbox has the default capability until its agent configures it, and
// it is its agent's alone.
func TestInboxIsItsAgentsToConfigure(t *testing.T) {
	t.Parallel()
	c := &console{t: t, h: newHarnessWith(t, tuning{api: httpapi.Options{Auth: authBoth()}}, zaptest.NewLogger(t))}
	inbox := c.sessionOf(alphaToken, c.ask(alphaToken, nil))
	quiet := map[string]any{"questionCapability": "none"}
	res := c.h.do(http.MethodPut, "/sessions/"+inbox, quiet, "Authorization", bearerAuth(betaToken))
	wantStatusError(t, "beta's PUT on alpha's inbox", res, http.StatusForbidden, "Forbidden")
	if !strings.Contains(string(res.Body), "alpha's inbox") {
		t.Errorf("403 body %s does not say whose inbox it is", res.Body)
	}
	form := seedForm()
	form["sessionID"] = inbox
	res = c.h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(betaToken))
	wantStatusError(t, "beta asking in alpha's inbox", res, http.StatusForbidden, "Forbidden")

	res = c.h.do(http.MethodPut, "/sessions/"+inbox, quiet, "Authorization", bearerAuth(alphaToken))
	if res.Status != http.StatusCreated {
		t.Fatalf("alpha's PUT on its inbox: %d %s", res.Status, res.Body)
	}
	res = c.h.do(http.MethodPost, "/elicitations", seedForm(), "Authorization", bearerAuth(alphaToken))
	wantStatusError(t, "alpha asking without a session once its inbox is none", res, http.StatusForbidden, "Forbidden")
	if beta := c.sessionOf(betaToken, c.ask(betaToken, nil)); beta == inbox {
		t.Errorf("beta's question went to alpha's inbox")
	}
}

// An MCP session is one conversation: connecting without a session still
// gives each connection a session of its own, not the inbox.
func TestMCPConnectionsWithoutASessionKeepTheirOwn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	inbox := h.create(seedForm()).SessionID
	askThroughMCP(t, h, &mcp.Implementation{Name: "first", Version: "1"}, "", "")
	askThroughMCP(t, h, &mcp.Implementation{Name: "second", Version: "1"}, "", "")
	var sessions []string
	for deadline := time.Now().Add(10 * time.Second); len(sessions) < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var list []struct{ SessionID string }
		h.do(http.MethodGet, "/question", nil).json(t, &list)
		sessions = sessions[:0]
		for _, q := range list {
			sessions = append(sessions, q.SessionID)
		}
	}
	slices.Sort(sessions)
	if len(slices.Compact(slices.Clone(sessions))) != 3 || !slices.Contains(sessions, inbox) {
		t.Errorf("sessions %q, want the inbox and one of each MCP connection's own", sessions)
	}
}
