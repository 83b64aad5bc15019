package pending_test

// What GET /question relies on to keep what it made of a list: the pending
// version moves with every change of the pending list, and a question's
// Listing memo is computed once for all the copies the store hands out.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

func TestPendingVersionMovesWithEveryChangeOfThePendingList(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newStore(t, pending.Options{})
		last := m.PendingVersion()
		moved := func(step string, want bool) {
			t.Helper()
			v := m.PendingVersion()
			if (v != last) != want {
				t.Errorf("%s: version %d after %d, want changed=%v", step, v, last, want)
			}
			last = v
		}
		mustCreate(t, m, ask("que_a"))
		moved("create", true)
		mustCreate(t, m, ask("que_b", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		moved("create with a deadline", true)
		if _, err := m.List(t.Context(), pending.Filter{}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Get(t.Context(), "que_a"); err != nil {
			t.Fatal(err)
		}
		moved("list and get", false)
		if _, err := m.Settle(t.Context(), "que_a", replied("x")); err != nil {
			t.Fatal(err)
		}
		moved("settle", true)
		if _, err := m.Settle(t.Context(), "que_a", replied("y")); err == nil {
			t.Fatal("settled twice")
		}
		moved("a second settle, refused", false)
		time.Sleep(2 * time.Minute) // fake time: the deadline passes
		synctest.Wait()
		moved("timeout", true)
	})
}

func TestListingIsComputedOnceAndDroppedWhenTheQuestionEnds(t *testing.T) {
	t.Parallel()
	m := newStore(t, pending.Options{})
	q := ask("que_a")
	q.Listing = new(pending.Memo)
	q.Listing.Bytes(func() []byte { return []byte("the caller's") })
	mustCreate(t, m, q)

	var computed atomic.Int32
	compute := func() []byte { computed.Add(1); return []byte(`{"id":"que_a"}`) }
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			list, err := m.List(context.Background(), pending.Filter{})
			if err != nil || len(list) != 1 {
				t.Errorf("list: %v %v", list, err)
				return
			}
			if got := string(list[0].Listing.Bytes(compute)); got != `{"id":"que_a"}` {
				t.Errorf("listing = %s, want the store's own, not the caller's memo", got)
			}
		})
	}
	wg.Wait()
	if n := computed.Load(); n != 1 {
		t.Errorf("computed %d times for 8 lists, want once", n)
	}
	ended, err := m.Settle(t.Context(), "que_a", replied("x"))
	if err != nil {
		t.Fatal(err)
	}
	if ended.Listing != nil {
		t.Error("an ended question keeps its listing")
	}
	if got := string((*pending.Memo)(nil).Bytes(compute)); got != `{"id":"que_a"}` || computed.Load() != 2 {
		t.Errorf("a nil memo gave %q after %d computations, want a fresh computation", got, computed.Load())
	}
}

func TestRestoredPendingQuestionsHaveAListing(t *testing.T) {
	t.Parallel()
	j := newFakeJournal()
	first, err := pending.Open(t.Context(), pending.Options{Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, first, ask("que_a"))
	if err := first.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	second, err := pending.Open(t.Context(), pending.Options{Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(context.Background())
	var computed int
	for range 2 {
		list, err := second.List(t.Context(), pending.Filter{})
		if err != nil || len(list) != 1 {
			t.Fatalf("list after restart: %v %v", list, err)
		}
		list[0].Listing.Bytes(func() []byte { computed++; return []byte("x") })
	}
	if computed != 1 {
		t.Errorf("a restored question's listing was computed %d times in 2 lists, want once", computed)
	}
}
