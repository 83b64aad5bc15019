package httpapi_test

import (
	"net/http"
	"testing"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/testenv"
)

// heapMiB is the live heap after a full collection (see heapInUse), in MiB.
func heapMiB() float64 { return float64(heapInUse()) / (1 << 20) }

// Issue 22 item 5, measured at a small scale (the repro was 200
// pending 1 MB questions, then 600 create+DELETE rounds, which took minutes
// under -race): pending 128 KiB questions until the byte budget refuses,
// then create+DELETE rounds that weigh about twice the budget. The heap is
// logged at each step; what the test asserts is that the store stays within
// its byte budget and the heap too, where every ended question used to keep
// its full text (e03eca4: the heap grew by every round's question).
func TestMemoryOfBigQuestions(t *testing.T) {
	testenv.Heavy(t, "holds a budget's worth of big questions")
	if onPostgres() {
		// It weighs this process's heap: on PostgreSQL the rows are the
		// database's to hold, and the cluster-wide budget is pgstore's
		// TestByteBudgetHoldsAcrossReplicas.
		t.Skip("measures the in-process store's memory; on PostgreSQL see pgstore's byte budget tests")
	}
	const budget = 32 << 20
	h := newHarnessWith(t, tuning{store: pending.Options{MaxBytes: budget, MaxBytesPerAgent: budget}}, zap.NewNop())
	form := bigForm(128 << 10)
	start := heapMiB()
	pendingHeld := 0
	for range 200 {
		res := h.do(http.MethodPost, "/elicitations", form)
		if res.Status == http.StatusTooManyRequests {
			break
		}
		if res.Status != http.StatusCreated {
			t.Fatalf("POST /elicitations: %d %s", res.Status, res.Body)
		}
		pendingHeld++
	}
	asked := heapMiB()
	if _, total := h.store.Bytes(""); total > budget {
		t.Fatalf("the store counts %d bytes, beyond its budget of %d", total, budget)
	}
	// Leave room for the churn: a budget full of pending questions refuses
	// every new one, and there is no result of the agent's to forget.
	ids := h.pendingIDs()
	for _, q := range ids[:len(ids)/2] {
		if res := h.do(http.MethodDelete, "/elicitations/"+q, nil); res.Status != http.StatusOK {
			t.Fatalf("DELETE: %d %s", res.Status, res.Body)
		}
	}
	const rounds = 500 // 62 MiB of messages, about twice the budget
	for range rounds {
		c := h.create(form)
		if res := h.do(http.MethodDelete, "/elicitations/"+c.ID, nil); res.Status != http.StatusOK {
			t.Fatalf("DELETE: %d %s", res.Status, res.Body)
		}
	}
	churned := heapMiB()
	_, total := h.store.Bytes("")
	t.Logf("heap in use: %.0f MiB at start, %.0f MiB with %d pending 128 KiB questions, %.0f MiB after %d create+DELETE rounds; the store counts %.0f MiB",
		start, asked, pendingHeld, churned, rounds, float64(total)/(1<<20))
	if total > budget {
		t.Fatalf("the store counts %d bytes after the churn, beyond its budget of %d", total, budget)
	}
	// The heap holds more than the weights the budget counts (the parsed
	// forms of pending questions, the operators' encoded list, maps and
	// their slack): measured about 1.5 times the budget. Twice the budget
	// bounds it; e03eca4, whose ended questions kept their whole text, grew
	// by several budgets here.
	if churned-start > 2*float64(budget>>20) {
		t.Fatalf("the heap grew by %.0f MiB, beyond twice the %d MiB budget", churned-start, budget>>20)
	}
}
