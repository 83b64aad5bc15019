package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/testkit"
)

// A result one replica forgets to keep an agent within its byte budget is
// forgotten on every replica: once B's tail has passed A's deletion, the
// result is gone on B too and a retry under its Idempotency-Key is told so
// (ErrGone, the HTTP 410), instead of B serving the result A evicted.
func TestBudgetEvictionIsForgottenOnEveryReplica(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{MaxBytesPerAgent: 4000})
	b := newReplica(t, url, pending.Options{}) // its own budgets never drop it
	ctx := t.Context()
	first := question("que_1")
	first.Owner, first.IdempotencyKey, first.RequestHash = "alpha", "k1", "h1"
	if err := a.store.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Settle(ctx, "que_1", reply("Red")); err != nil {
		t.Fatal(err)
	}
	b.observed.until(t, "que_1", true)
	if q, err := b.store.Get(ctx, "que_1"); err != nil || q.Ended == nil {
		t.Fatalf("B before the eviction: %+v, %v; want que_1's result", q, err)
	}
	big := question("que_2")
	big.Owner, big.Message = "alpha", strings.Repeat("m", 2500) // alpha's budget holds it only without que_1
	if err := a.store.Create(ctx, big); err != nil {
		t.Fatalf("a create that fits once alpha's oldest result is forgotten: %v", err)
	}
	if _, err := a.store.Get(ctx, "que_1"); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("A after the eviction: %v; want ErrNotFound", err)
	}
	// A's janitor deletes the record (and stores the key) in one commit.
	testkit.Eventually(t, 10*time.Second, "A deleting the evicted record", func() bool {
		return rowCount(t, a.db, "gone_keys", "owner = 'alpha' AND request_key = 'k1'") == 1
	})
	// Wait for B's tail to apply every change committed so far, the
	// deletion included; then B must agree with A at once.
	if err := b.tail.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if q, err := b.store.Get(ctx, "que_1"); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("B after A forgot que_1: %+v, %v; want ErrNotFound", q, err)
	}
	var gone *pending.KeyGoneError
	if q, err := b.store.FindKey(ctx, "alpha", "k1"); !errors.As(err, &gone) || gone.ID != "que_1" || gone.RequestHash != "h1" {
		t.Fatalf("B: a retry under que_1's key = %+v, %v; want a KeyGoneError for que_1", q, err)
	}
	if q, err := b.store.Get(ctx, "que_2"); err != nil || q.Ended != nil {
		t.Fatalf("B: que_2 = %+v, %v; want it pending", q, err)
	}
}
