package pending_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

func keyed(owner, key, hash string) func(*pending.Question) {
	return func(q *pending.Question) { q.Owner, q.IdempotencyKey, q.RequestHash = owner, key, hash }
}

func TestIdempotencyKeysBelongToTheirOwner(t *testing.T) {
	t.Parallel()
	for kind, open := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			m, _ := open(t, pending.Options{})
			mustCreate(t, m, ask("que_1", keyed("alice", "k1", "h1")))
			if err := m.Create(ctx, ask("que_2", keyed("alice", "k1", "h2"))); !errors.Is(err, pending.ErrExists) {
				t.Fatalf("a second question under alice's key: %v, want ErrExists", err)
			}
			mustCreate(t, m, ask("que_3", keyed("bob", "k1", "h3")))
			mustCreate(t, m, ask("que_4")) // no key: never in the way of anyone
			mustCreate(t, m, ask("que_5"))

			for _, tt := range []struct{ owner, key, id, hash string }{
				{"alice", "k1", "que_1", "h1"},
				{"bob", "k1", "que_3", "h3"},
			} {
				q, err := m.FindKey(ctx, tt.owner, tt.key)
				if err != nil || q.ID != tt.id || q.RequestHash != tt.hash {
					t.Fatalf("FindKey(%s, %s) = %+v, %v; want %s", tt.owner, tt.key, q, err, tt.id)
				}
			}
			for _, miss := range [][2]string{{"alice", "k2"}, {"carol", "k1"}, {"", ""}} {
				if q, err := m.FindKey(ctx, miss[0], miss[1]); !errors.Is(err, pending.ErrNotFound) {
					t.Fatalf("FindKey(%q, %q) = %+v, %v; want ErrNotFound", miss[0], miss[1], q, err)
				}
			}
			// An ended question keeps its key while it is retained.
			if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
				t.Fatal(err)
			}
			if q, err := m.FindKey(ctx, "alice", "k1"); err != nil || q.Ended == nil {
				t.Fatalf("FindKey after the ending = %+v, %v; want the ended question", q, err)
			}
			if err := m.Create(ctx, ask("que_6", keyed("alice", "k1", "h1"))); !errors.Is(err, pending.ErrExists) {
				t.Fatalf("a new question under a retained key: %v, want ErrExists", err)
			}
		})
	}
}

// Rivals creating under one key: exactly one wins, whatever the store.
func TestIdempotencyKeyRivalsCreateOnce(t *testing.T) {
	t.Parallel()
	for kind, open := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			m, _ := open(t, pending.Options{})
			const rivals = 8
			errs := make(chan error, rivals)
			var wg sync.WaitGroup
			for i := range rivals {
				wg.Go(func() { errs <- m.Create(t.Context(), ask(fmt.Sprintf("que_%d", i), keyed("a", "k", "h"))) })
			}
			wg.Wait()
			close(errs)
			won := 0
			for err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, pending.ErrExists):
					t.Fatalf("a rival failed with %v, want ErrExists", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d rivals created a question under one key, want 1", won)
			}
		})
	}
}

// A key whose question left retention is gone (ErrGone, naming the
// question) for KeyRetention more, then free again, and the janitor's sweep
// of the old question leaves the newcomer's key alone.
func TestIdempotencyKeyIsFreeAfterKeyRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := newStore(t, pending.Options{Retention: time.Minute, KeyRetention: 2 * time.Minute})
		mustCreate(t, m, ask("que_1", keyed("a", "k", "h1")))
		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		var gone *pending.KeyGoneError
		if q, err := m.FindKey(ctx, "a", "k"); !errors.As(err, &gone) || gone.ID != "que_1" || gone.RequestHash != "h1" || !errors.Is(err, pending.ErrGone) {
			t.Fatalf("FindKey past retention = %+v, %v; want a KeyGoneError for que_1", q, err)
		}
		time.Sleep(time.Minute) // the janitor forgets que_1, remembering its key
		synctest.Wait()
		if _, err := m.FindKey(ctx, "a", "k"); !errors.Is(err, pending.ErrGone) {
			t.Fatalf("FindKey once que_1 is forgotten = %v; want ErrGone", err)
		}
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if q, err := m.FindKey(ctx, "a", "k"); !errors.Is(err, pending.ErrNotFound) {
			t.Fatalf("FindKey past key retention = %+v, %v; want ErrNotFound", q, err)
		}
		mustCreate(t, m, ask("que_2", keyed("a", "k", "h2")))
		time.Sleep(2 * time.Minute) // the janitor forgets que_1
		synctest.Wait()
		if q, err := m.FindKey(ctx, "a", "k"); err != nil || q.ID != "que_2" {
			t.Fatalf("FindKey after the sweep = %+v, %v; want que_2", q, err)
		}
	})
}

func TestRestartKeepsIdempotencyKeys(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	first := startBoltStore(t, path, pending.Options{})
	mustCreate(t, first.Store, ask("que_1", keyed("a", "pending", "h1")))
	mustCreate(t, first.Store, ask("que_2", keyed("a", "ended", "h2")))
	if _, err := first.Settle(ctx, "que_2", replied("Red")); err != nil {
		t.Fatal(err)
	}
	first.stop()

	second := startBoltStore(t, path, pending.Options{})
	for key, id := range map[string]string{"pending": "que_1", "ended": "que_2"} {
		q, err := second.FindKey(ctx, "a", key)
		if err != nil || q.ID != id || q.IdempotencyKey != key || q.RequestHash == "" {
			t.Fatalf("FindKey(%s) after a restart = %+v, %v; want %s with its hash", key, q, err, id)
		}
	}
	if err := second.Create(ctx, ask("que_3", keyed("a", "pending", "h1"))); !errors.Is(err, pending.ErrExists) {
		t.Fatalf("a new question under a restored key: %v, want ErrExists", err)
	}
}

// The key of a result evicted by MaxRetained is remembered across a
// restart, whether the eviction's deletion ran before the restart or not.
func TestRestartRemembersForgottenKeys(t *testing.T) {
	t.Parallel()
	for _, swept := range []bool{true, false} {
		t.Run(map[bool]string{true: "swept", false: "unswept"}[swept], func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "questions.db")
			first := startBoltStore(t, path, pending.Options{MaxRetained: 1})
			mustCreate(t, first.Store, ask("que_1", keyed("a", "k", "h1")))
			if _, err := first.Settle(ctx, "que_1", replied("Red")); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, first.Store, ask("que_2", keyed("a", "other", "h2")))
			if _, err := first.Settle(ctx, "que_2", replied("Red")); err != nil {
				t.Fatal(err)
			}
			if swept {
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if _, err := first.FindKey(ctx, "a", "k"); errors.Is(err, pending.ErrGone) {
						break
					} else if time.Now().After(deadline) {
						t.Fatalf("FindKey of the evicted key: %v", err)
					}
				}
				time.Sleep(50 * time.Millisecond) // the janitor's deletion
			}
			first.stop()

			second := startBoltStore(t, path, pending.Options{MaxRetained: 1})
			var gone *pending.KeyGoneError
			if q, err := second.FindKey(ctx, "a", "k"); !errors.As(err, &gone) || gone.ID != "que_1" || gone.RequestHash != "h1" {
				t.Fatalf("FindKey of the evicted key after a restart = %+v, %v; want a KeyGoneError for que_1", q, err)
			}
		})
	}
}
