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

// One agent's create+answer churn on two replicas at once, within a small
// byte budget of its own: each creation makes room by forgetting the
// agent's oldest results (in the database too, whichever replica's store
// forgot them first), so none is refused; the agent never holds more than
// its budget, and the database's counters match what its records weigh.
func TestByteBudgetChurnOnTwoReplicas(t *testing.T) {
	url := database(t)
	sample := question("que_a000")
	sample.Owner, sample.Message = "alpha", strings.Repeat("m", 500)
	w := pending.Weigh(sample)
	perAgent := 5*w + w/2
	a, b := budgetReplica(t, url, 0, perAgent), budgetReplica(t, url, 0, perAgent)
	var wg sync.WaitGroup
	for name, r := range map[string]*replica{"a": a, "b": b} {
		wg.Go(func() {
			for i := range 25 {
				q := question(fmt.Sprintf("que_%s%03d", name, i))
				q.Owner, q.Message, q.IdempotencyKey, q.RequestHash = "alpha", sample.Message, fmt.Sprintf("k_%s%03d", name, i), "h"
				if err := r.store.Create(context.Background(), q); err != nil {
					t.Errorf("create %s on %s: %v", q.ID, name, err)
					return
				}
				if _, err := r.store.Settle(context.Background(), q.ID, reply("Red")); err != nil {
					t.Errorf("answer %s on %s: %v", q.ID, name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	total, per := heldBytes(t, url)
	if per["alpha"] > perAgent {
		t.Fatalf("alpha holds %d bytes; its budget is %d", per["alpha"], perAgent)
	}
	var counted, agent int64
	if err := a.db.Pool().QueryRow(context.Background(), "SELECT (SELECT n FROM held_bytes), (SELECT bytes FROM pending_owners WHERE owner = 'alpha')").Scan(&counted, &agent); err != nil {
		t.Fatal(err)
	}
	if counted != total || agent != per["alpha"] {
		t.Fatalf("the database counts %d bytes, %d of them alpha's; its records weigh %d, %d", counted, agent, total, per["alpha"])
	}
	// Every replica agrees on which results are left, once each has
	// deleted what its store evicted and read the other's deletions.
	left := func(r *replica) map[string]bool {
		qs, err := r.store.List(context.Background(), pending.Filter{Ended: true})
		if err != nil {
			t.Fatal(err)
		}
		ids := make(map[string]bool)
		for _, q := range qs {
			ids[q.ID] = true
		}
		return ids
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		for _, r := range []*replica{a, b} {
			if err := r.tail.CatchUp(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		la, lb := left(a), left(b)
		if fmt.Sprint(la) == fmt.Sprint(lb) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A holds %v, B %v", la, lb)
		}
	}
}

// A database written before the byte counters (schema version 9) is
// counted by the migration: every record gets a weight, and each agent's
// counter and the total add them up.
func TestByteCountersOfAnOlderDatabase(t *testing.T) {
	url := database(t)
	ctx := context.Background()
	r := newReplica(t, url, pending.Options{})
	for i, owner := range []string{"alpha", "alpha", "bravo", ""} {
		q := question(fmt.Sprintf("que_%d", i))
		q.Owner = owner
		if err := r.store.Create(ctx, q); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := r.store.Settle(ctx, q.ID, reply("Red")); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := r.db.Pool().Exec(ctx, `
DROP FUNCTION questiond_apply(text[], text[], text[], text[], timestamptz[], timestamptz[], bigint, bigint, bigint[], bigint, bigint, timestamptz);
DROP TRIGGER questions_deleted ON questions;
DROP FUNCTION questiond_deleted, questiond_forget, questiond_forget_oldest, questiond_weigh;
DROP TABLE held_bytes;
ALTER TABLE questions DROP COLUMN weight;
ALTER TABLE pending_owners DROP COLUMN bytes;
UPDATE questiond_schema SET version = 9`)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, url) // migrates to the current version
	var total, summed, alpha, alphaSummed, unweighed int64
	err = s.Pool().QueryRow(ctx, `SELECT (SELECT n FROM held_bytes), (SELECT sum(weight) FROM questions),
	(SELECT bytes FROM pending_owners WHERE owner = 'alpha'), (SELECT sum(weight) FROM questions WHERE owner = 'alpha'),
	(SELECT count(*) FROM questions WHERE weight <= 0)`).Scan(&total, &summed, &alpha, &alphaSummed, &unweighed)
	if err != nil {
		t.Fatal(err)
	}
	if unweighed != 0 || total != summed || alpha != alphaSummed || alpha <= 0 {
		t.Fatalf("after the migration: total %d of %d weighed, alpha %d of %d, %d records without a weight", total, summed, alpha, alphaSummed, unweighed)
	}
}
