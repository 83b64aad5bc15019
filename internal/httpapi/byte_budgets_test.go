package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/pending"
)

// bigForm is the seed form with a message of n bytes.
func bigForm(n int) map[string]any {
	form := seedForm()
	form["message"] = strings.Repeat("m", n)
	return form
}

// fillUntilRefused creates big forms as the agent with token until one is
// refused (at most limit tries), and returns how many were created and the
// refusal.
func (h *harness) fillUntilRefused(token string, limit int) (int, response) {
	h.t.Helper()
	for n := 0; n < limit; n++ {
		res := h.do(http.MethodPost, "/elicitations", bigForm(100<<10), "Authorization", bearerAuth(token))
		if res.Status != http.StatusCreated {
			return n, res
		}
	}
	h.t.Fatalf("%d questions of 100 KiB created, none refused", limit)
	return 0, response{}
}

// wantBudgetRefusal checks a 429 TooManyRequests whose message names flag.
func wantBudgetRefusal(t *testing.T, what string, res response, flag string) {
	t.Helper()
	var body struct {
		Name string
		Data struct{ Message string }
	}
	res.json(t, &body)
	if res.Status != http.StatusTooManyRequests || body.Name != "TooManyRequests" || !strings.Contains(body.Data.Message, flag) {
		t.Fatalf("%s: %d %s; want 429 TooManyRequests naming %s", what, res.Status, res.Body, flag)
	}
}

// Issue 22 item 5: an agent's pending questions are bounded in bytes
// (--max-bytes-per-agent): beyond, a create is 429 naming the budget, and
// another agent still asks.
func TestByteBudgetPerAgent(t *testing.T) {
	t.Parallel()
	h := agentsHarness(t, pending.Options{MaxBytesPerAgent: 1 << 20})
	n, refused := h.fillUntilRefused(alphaToken, 50)
	if n == 0 || n > 10 {
		t.Fatalf("%d questions of 100 KiB fit a budget of 1 MiB", n)
	}
	wantBudgetRefusal(t, "alpha beyond its budget", refused, "--max-bytes-per-agent")
	if agent, _ := h.store.Bytes("alpha"); agent > 1<<20 {
		t.Fatalf("alpha holds %d bytes, beyond its budget", agent)
	}
	h.askAs(betaToken, "")
}

// The total budget (--max-bytes) bounds every agent's questions together.
func TestByteBudgetTotal(t *testing.T) {
	t.Parallel()
	h := agentsHarness(t, pending.Options{MaxBytes: 1 << 20})
	n, refused := h.fillUntilRefused(alphaToken, 50)
	if n == 0 || n > 10 {
		t.Fatalf("%d questions of 100 KiB fit a budget of 1 MiB", n)
	}
	wantBudgetRefusal(t, "alpha beyond the total", refused, "--max-bytes")
	if strings.Contains(string(refused.Body), "--max-bytes-per-agent") {
		t.Fatalf("the total's refusal names the agent's budget: %s", refused.Body)
	}
	_, refused = h.fillUntilRefused(betaToken, 1)
	wantBudgetRefusal(t, "beta beyond the total", refused, "--max-bytes")
	if _, total := h.store.Bytes(""); total > 1<<20 {
		t.Fatalf("questiond holds %d bytes, beyond its budget", total)
	}
}

// An agent that churns big questions (create, DELETE) stays within its
// byte budget by forgetting its own oldest results, never another's.
func TestByteBudgetChurnForgetsOwnResults(t *testing.T) {
	t.Parallel()
	h := agentsHarness(t, pending.Options{MaxBytesPerAgent: 1 << 20})
	kept := h.askAs(betaToken, "beta-k")
	h.replyAsOperator(kept.ID)
	for range 30 {
		res := h.do(http.MethodPost, "/elicitations", bigForm(100<<10), "Authorization", bearerAuth(alphaToken))
		var c created
		res.json(t, &c)
		if res.Status != http.StatusCreated {
			t.Fatalf("alpha's churn: %d %s; its own results should make room", res.Status, res.Body)
		}
		h.do(http.MethodDelete, "/elicitations/"+c.ID, nil, "Authorization", bearerAuth(alphaToken))
	}
	if agent, _ := h.store.Bytes("alpha"); agent > 1<<20 {
		t.Fatalf("alpha holds %d bytes after its churn, beyond its budget", agent)
	}
	if res := h.do(http.MethodGet, "/elicitations/"+kept.ID, nil, "Authorization", bearerAuth(betaToken)); res.Status != http.StatusOK {
		t.Fatalf("beta's result after alpha's churn: %d %s", res.Status, res.Body)
	}
}
