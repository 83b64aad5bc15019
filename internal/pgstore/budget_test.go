package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
)

// budgetReplica is a replica whose store and database enforce the same
// byte budgets, as the daemon opens them.
func budgetReplica(t *testing.T, url string, maxBytes, perAgent int64) *replica {
	t.Helper()
	db, err := pgstore.Open(context.Background(), url, pgstore.Options{MaxBytes: maxBytes, MaxBytesPerAgent: perAgent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	r := &replica{db: db, ends: newRecorder(), observed: newRecorder()}
	j := db.Questions()
	m, err := pending.Open(context.Background(), pending.Options{Journal: j, MaxBytes: maxBytes, MaxBytesPerAgent: perAgent})
	if err != nil {
		t.Fatal(err)
	}
	r.store, r.journal = m, j
	r.tail = db.Follow(m, j, pgstore.TailOptions{PollInterval: 200 * time.Millisecond})
	t.Cleanup(func() {
		r.tail.Stop()
		_ = m.Close(context.Background())
	})
	return r
}

// heldBytes weighs every record the database holds, as a store does.
func heldBytes(t *testing.T, url string) (total int64, per map[string]int64) {
	t.Helper()
	qs, err := open(t, url).Questions().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	per = make(map[string]int64)
	for _, q := range qs {
		w := pending.Weigh(q)
		total += w
		per[q.Owner] += w
	}
	return total, per
}

// Creations on two replicas at once, near a small total byte budget: the
// database counts the budget for the whole cluster, so together they
// never hold more than it, however the creations interleave; those beyond
// it are refused with the budget's error (the 429 naming --max-bytes).
func TestByteBudgetHoldsAcrossReplicas(t *testing.T) {
	url := database(t)
	sample := question("que_a_00")
	sample.Owner, sample.Message = "agent_00", strings.Repeat("m", 500)
	w := pending.Weigh(sample)
	const fit = 12
	budget := fit*w + w/2
	a, b := budgetReplica(t, url, budget, budget), budgetReplica(t, url, budget, budget)
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := 0, 0
	for round := range 3 {
		for name, r := range map[string]*replica{"a": a, "b": b} {
			for i := range fit {
				wg.Go(func() {
					q := question(fmt.Sprintf("que_%s%d%02d", name, round, i))
					q.Owner, q.Message = fmt.Sprintf("agent_%d%d", round, i%10), sample.Message
					err := r.store.Create(context.Background(), q)
					var be *pending.BudgetError
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						created++
					case errors.As(err, &be) && be.Budget == pending.BudgetTotal:
						refused++
					default:
						t.Errorf("create on %s: %v; want success or the total budget's refusal", name, err)
					}
				})
			}
		}
	}
	wg.Wait()
	total, _ := heldBytes(t, url)
	if total > budget {
		t.Fatalf("the replicas hold %d bytes (%d questions created, %d refused); the budget is %d", total, created, refused, budget)
	}
	if created != fit || refused != 6*fit-fit {
		t.Fatalf("%d created, %d refused; want %d and %d", created, refused, fit, 6*fit-fit)
	}
	var counted int64
	if err := a.db.Pool().QueryRow(context.Background(), "SELECT n FROM held_bytes").Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if counted != total {
		t.Fatalf("the database counts %d bytes; its records weigh %d", counted, total)
	}
}
