package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// agentsHarness is a questiond with the operator and two agent tokens,
// alpha and beta, whose store settings the test chooses.
func agentsHarness(t *testing.T, store pending.Options) *harness {
	t.Helper()
	return newHarnessWith(t, tuning{api: httpapi.Options{Auth: authBoth()}, store: store}, zaptest.NewLogger(t))
}

// askAs creates the seed form as the agent with token ("": none), under
// key ("" for none), and returns the created elicitation.
func (h *harness) askAs(token, key string) created {
	h.t.Helper()
	var headers []string
	if token != "" {
		headers = append(headers, "Authorization", bearerAuth(token))
	}
	if key != "" {
		headers = append(headers, keyHeader, key)
	}
	res := h.do(http.MethodPost, "/elicitations", seedForm(), headers...)
	var c created
	res.json(h.t, &c)
	if res.Status != http.StatusCreated {
		h.t.Fatalf("POST /elicitations as %s: %d %s", token, res.Status, res.Body)
	}
	return c
}

// churn is n create+DELETE rounds by the agent with token ("": none).
func (h *harness) churn(token string, n int) {
	h.t.Helper()
	for range n {
		c := h.askAs(token, "")
		var headers []string
		if token != "" {
			headers = append(headers, "Authorization", bearerAuth(token))
		}
		if res := h.do(http.MethodDelete, "/elicitations/"+c.ID, nil, headers...); res.Status != http.StatusOK {
			h.t.Fatalf("DELETE as %s: %d %s", token, res.Status, res.Body)
		}
	}
}

// replyAsOperator answers the seed form's question id.
func (h *harness) replyAsOperator(id string) {
	h.t.Helper()
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY215C"],[]]}`,
		"Authorization", basicAuth("opencode", operatorPassword)); res.Status != http.StatusOK {
		h.t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
}

// Issue 22 item 6: with --max-retained 20, beta's 25 create+DELETE rounds
// must not evict alpha's answered result: alpha still reads it, and its
// retry under the same Idempotency-Key gets the same question, answered,
// instead of asking the human again.
func TestOneAgentsChurnKeepsAnothersResult(t *testing.T) {
	t.Parallel()
	h := agentsHarness(t, pending.Options{MaxRetained: 20})
	asked := h.askAs(alphaToken, "alpha-k1")
	h.replyAsOperator(asked.ID)
	h.churn(betaToken, 25)

	res := h.do(http.MethodGet, "/elicitations/"+asked.ID, nil, "Authorization", bearerAuth(alphaToken))
	var got created
	res.json(t, &got)
	if res.Status != http.StatusOK || got.Result == nil || got.Result.Action != "accept" || got.Result.Content["model"] != "SY215C" {
		t.Fatalf("alpha's answered result after beta's churn: %d %s; want the answer", res.Status, res.Body)
	}
	retry := h.do(http.MethodPost, "/elicitations", seedForm(), "Authorization", bearerAuth(alphaToken), keyHeader, "alpha-k1")
	var again created
	retry.json(t, &again)
	if retry.Status != http.StatusCreated || again.ID != asked.ID || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("alpha's retry after beta's churn: %d %v %s; want its own answered question replayed", retry.Status, retry.Header, retry.Body)
	}
	if n := h.pendingCount(t); n != 0 {
		t.Fatalf("%d questions pending: the retry asked the human again", n)
	}
	// Beta, the churner, is the one that forgot: its oldest results are gone.
	if n := h.retainedOf(t, betaToken); n > 19 {
		t.Fatalf("beta keeps %d results, want at most 19 beside alpha's one", n)
	}
}

// pendingCount is how many questions the store holds pending.
func (h *harness) pendingCount(t *testing.T) int {
	t.Helper()
	qs, err := h.store.List(t.Context(), pending.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(qs)
}

// retainedOf counts the ended elicitations the agent with token can still
// read among those the store holds.
func (h *harness) retainedOf(t *testing.T, token string) int {
	t.Helper()
	owner := map[string]string{alphaToken: "alpha", betaToken: "beta"}[token]
	qs, err := h.store.List(t.Context(), pending.Filter{Ended: true, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return len(qs)
}

// An agent's own churn beyond --max-retained-per-agent forgets its own
// oldest result; a retry under that result's Idempotency-Key is then 410
// QuestionGoneError naming the question, and asks nothing again. A
// different request under that key is still 422.
func TestRetryOfAForgottenKeyIsGone(t *testing.T) {
	t.Parallel()
	h := agentsHarness(t, pending.Options{MaxRetainedPerAgent: 3})
	asked := h.askAs(alphaToken, "alpha-k1")
	h.replyAsOperator(asked.ID)
	h.churn(alphaToken, 3)
	if res := h.do(http.MethodGet, "/elicitations/"+asked.ID, nil, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusNotFound {
		t.Fatalf("alpha's oldest result after its own churn: %d %s; want it forgotten (404)", res.Status, res.Body)
	}
	res := h.do(http.MethodPost, "/elicitations", seedForm(), "Authorization", bearerAuth(alphaToken), keyHeader, "alpha-k1")
	var body struct {
		Name string `json:"name"`
		Data struct {
			Message   string `json:"message"`
			RequestID string `json:"requestID"`
		} `json:"data"`
	}
	res.json(t, &body)
	if res.Status != http.StatusGone || body.Name != "QuestionGoneError" || body.Data.RequestID != asked.ID || body.Data.Message == "" {
		t.Fatalf("retry of a forgotten key: %d %s; want 410 QuestionGoneError naming %s", res.Status, res.Body, asked.ID)
	}
	if n := h.pendingCount(t); n != 0 {
		t.Fatalf("%d questions pending: a retry of a forgotten key asked the human again", n)
	}
	other := seedForm()
	other["message"] = "Something else"
	if res := h.do(http.MethodPost, "/elicitations", other, "Authorization", bearerAuth(alphaToken), keyHeader, "alpha-k1"); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("another request under a forgotten key: %d %s; want 422", res.Status, res.Body)
	}
	// Beta's identical key is beta's own, and new.
	if c := h.askAs(betaToken, "alpha-k1"); c.ID == asked.ID {
		t.Fatal("beta's key reached alpha's question")
	}
}

// A key is remembered --key-retention after its result is forgotten, then
// it is unknown again and asks a new question.
func TestForgottenKeyIsNewAfterKeyRetention(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, tuning{store: pending.Options{Retention: 50 * time.Millisecond, KeyRetention: 300 * time.Millisecond}}, zaptest.NewLogger(t))
	first := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1")
	var c created
	first.json(t, &c)
	h.do(http.MethodDelete, "/elicitations/"+c.ID, nil)
	for deadline := time.Now().Add(10 * time.Second); h.do(http.MethodGet, "/elicitations/"+c.ID, nil).Status != http.StatusNotFound; {
		if time.Now().After(deadline) {
			t.Fatal("the withdrawn question is still retained after 10s")
		}
		time.Sleep(10 * time.Millisecond) // retention runs on the real clock here
	}
	if res := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1"); res.Status != http.StatusGone {
		t.Fatalf("retry once the result is forgotten: %d %s; want 410", res.Status, res.Body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		again := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1")
		if again.Status == http.StatusGone && time.Now().Before(deadline) {
			continue
		}
		var n created
		again.json(t, &n)
		if again.Status != http.StatusCreated || n.ID == c.ID || n.Status != "pending" || again.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("create after key retention: %d %v %s; want a new question", again.Status, again.Header, again.Body)
		}
		return
	}
}

// A JSON-RPC POST /elicit retried under the key of a forgotten result gets
// the same HTTP 410 (it is about the HTTP request, as 409 and 422 are),
// not a second question.
func TestElicitRetryOfAForgottenKeyIsGone(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, tuning{store: pending.Options{MaxRetained: 1}}, zaptest.NewLogger(t))
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	rpc := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": seedForm()}
	first := h.startElicit(rpc, "k-1")
	id := askedFrameID(t, events.expect(t, "question.asked"))
	h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY365H"],["Low power"]]}`)
	if res := <-first.done; res.Status != http.StatusOK {
		t.Fatalf("the first call: %d %s", res.Status, res.Body)
	}
	h.churn("", 1) // one more result of the same (unauthenticated) owner evicts the first
	retry := <-h.startElicit(rpc, "k-1").done
	var body struct {
		Name string
		Data struct{ RequestID string }
	}
	retry.json(t, &body)
	if retry.Status != http.StatusGone || body.Name != "QuestionGoneError" || body.Data.RequestID != id {
		t.Fatalf("the retry: %d %s; want 410 QuestionGoneError naming %s", retry.Status, retry.Body, id)
	}
	if n := h.pendingCount(t); n != 0 {
		t.Fatalf("%d questions pending: the retry asked again", n)
	}
}
