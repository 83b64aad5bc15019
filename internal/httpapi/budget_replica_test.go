package httpapi_test

import (
	"net/http"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
)

// Issue 22 items 5 and 6 on PostgreSQL: alpha, over its byte budget on
// replica A, forgets its oldest result there; replica B agrees at once (as
// soon as its tail has read A's creation): the result is 404 on B too, and
// a retry under its Idempotency-Key is 410 QuestionGoneError, not the
// result A forgot.
func TestReplicasAgreeOnAByteBudgetsEviction(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	probe := newHarnessWith(t, tuning{api: httpapi.Options{Auth: authBoth()}, database: pgtest.Database(t)}, zaptest.NewLogger(t))
	probe.askAs(alphaToken, "")
	weight, _ := probe.store.Bytes("alpha") // one pending seed form
	budget := pending.Options{MaxBytesPerAgent: weight + weight/2}
	a := newHarnessWith(t, tuning{api: httpapi.Options{Auth: authBoth()}, store: budget, database: url}, zaptest.NewLogger(t))
	b := newHarnessWith(t, tuning{api: httpapi.Options{Auth: authBoth()}, database: url}, zaptest.NewLogger(t))
	alpha := []string{"Authorization", bearerAuth(alphaToken)}

	first := a.askAs(alphaToken, "alpha-k1")
	a.replyAsOperator(first.ID)
	if res := b.do(http.MethodGet, "/elicitations/"+first.ID, nil, alpha...); res.Status != http.StatusOK {
		t.Fatalf("B reads alpha's result: %d %s", res.Status, res.Body)
	}
	second := a.askAs(alphaToken, "") // fits alpha's budget only once its first result is forgotten
	if res := a.do(http.MethodGet, "/elicitations/"+first.ID, nil, alpha...); res.Status != http.StatusNotFound {
		t.Fatalf("A after the eviction: %d %s; want 404", res.Status, res.Body)
	}
	// B's tail reaches A's creation (a miss catches up), and with it A's
	// forgetting, which the database logged before it committed the
	// creation.
	if res := b.do(http.MethodGet, "/elicitations/"+second.ID, nil, alpha...); res.Status != http.StatusOK {
		t.Fatalf("B reads alpha's second question: %d %s", res.Status, res.Body)
	}
	if res := b.do(http.MethodGet, "/elicitations/"+first.ID, nil, alpha...); res.Status != http.StatusNotFound {
		t.Fatalf("B after A forgot alpha's result: %d %s; want 404", res.Status, res.Body)
	}
	res := b.do(http.MethodPost, "/elicitations", seedForm(), append(alpha, keyHeader, "alpha-k1")...)
	var body struct {
		Name string `json:"name"`
		Data struct {
			RequestID string `json:"requestID"`
		} `json:"data"`
	}
	res.json(t, &body)
	if res.Status != http.StatusGone || body.Name != "QuestionGoneError" || body.Data.RequestID != first.ID {
		t.Fatalf("B: a retry under the forgotten key: %d %s; want 410 QuestionGoneError naming %s", res.Status, res.Body, first.ID)
	}
}
