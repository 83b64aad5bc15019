package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/testkit"
)

// The Idempotency-Key of a result evicted by one replica's bound is
// remembered in the database: a replica started afterwards, and the first
// replica after a restart, answer a retry under it with ErrGone naming the
// question, instead of a free key.
func TestForgottenKeysAreShared(t *testing.T) {
	url := database(t)
	opts := pending.Options{MaxRetained: 1}
	a := newReplica(t, url, opts)
	ctx := t.Context()
	keyed := question("que_1")
	keyed.Owner, keyed.IdempotencyKey, keyed.RequestHash = "alpha", "k1", "h1"
	if err := a.store.Create(ctx, keyed); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Settle(ctx, "que_1", reply("Red")); err != nil {
		t.Fatal(err)
	}
	other := question("que_2")
	other.Owner = "alpha" // its own second result evicts its first
	if err := a.store.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Settle(ctx, "que_2", reply("Blue")); err != nil {
		t.Fatal(err)
	}
	// que_1 is evicted at once; its record goes with the janitor's sweep.
	testkit.Eventually(t, 10*time.Second, "the evicted question's key stored", func() bool {
		return rowCount(t, a.db, "gone_keys", "owner = 'alpha' AND request_key = 'k1' AND question_id = 'que_1'") == 1
	})
	b := newReplica(t, url, opts)
	for name, r := range map[string]*replica{"running replica": a, "replica started later": b} {
		var gone *pending.KeyGoneError
		if q, err := r.store.FindKey(ctx, "alpha", "k1"); !errors.As(err, &gone) || gone.ID != "que_1" || gone.RequestHash != "h1" {
			t.Fatalf("%s: FindKey of the evicted key = %+v, %v; want a KeyGoneError for que_1", name, q, err)
		}
	}
	if _, err := b.store.FindKey(ctx, "beta", "k1"); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("another owner's identical key: %v, want ErrNotFound", err)
	}
}
