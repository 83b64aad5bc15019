package ask_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
)

// The grace period on a fake clock: a dropped keyed caller's question waits
// exactly ReconnectGrace; a retry that attaches in time keeps it, and the
// grace starts over when that caller drops too.
func TestReconnectGraceTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := pending.New(pending.Options{})
		defer store.Close(t.Context())
		const grace = time.Minute
		s := newService(t, store, ask.Options{ReconnectGrace: grace})
		if err := store.Create(t.Context(), &pending.Question{ID: "que_1"}); err != nil {
			t.Fatal(err)
		}
		ending := func() pending.Ending {
			synctest.Wait()
			q, err := store.Get(t.Context(), "que_1")
			if err != nil {
				t.Fatal(err)
			}
			if q.Ended == nil {
				return ""
			}
			return q.Ended.Ending
		}

		s.Attach("que_1")(true) // the first caller drops
		time.Sleep(grace - time.Nanosecond)
		if got := ending(); got != "" {
			t.Fatalf("ended %q before the grace was over", got)
		}
		detach := s.Attach("que_1") // the retry, just in time
		time.Sleep(2 * grace)
		if got := ending(); got != "" {
			t.Fatalf("ended %q although a retry is waiting", got)
		}
		detach(true) // the retry drops too
		time.Sleep(grace - time.Nanosecond)
		if got := ending(); got != "" {
			t.Fatalf("ended %q before the second grace was over", got)
		}
		time.Sleep(time.Nanosecond)
		if got := ending(); got != pending.EndDisconnected {
			t.Fatalf("ending %q after the grace, want %q", got, pending.EndDisconnected)
		}
		if n := s.GraceRecords(); n != 0 {
			t.Fatalf("%d grace records left", n)
		}
	})
}

// A caller that leaves because its question ended arms nothing, and a
// draining service withdraws nothing when a grace runs out.
func TestReconnectGraceLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := pending.New(pending.Options{})
		defer store.Close(t.Context())
		s := newService(t, store, ask.Options{ReconnectGrace: time.Minute})
		for _, id := range []string{"que_1", "que_2"} {
			if err := store.Create(t.Context(), &pending.Question{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		s.Attach("que_1")(false)
		s.Attach("que_2")(true)
		s.Drain()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		for _, id := range []string{"que_1", "que_2"} {
			if q, err := store.Get(t.Context(), id); err != nil || q.Ended != nil {
				t.Fatalf("%s: %+v, %v; want it pending", id, q, err)
			}
		}
		if n := s.GraceRecords(); n != 0 {
			t.Fatalf("%d grace records left", n)
		}
	})
}

// Issue 22, point (b): a keyed retry that attaches after the grace ran out
// but before its withdrawal is stored waits on a question about to be
// withdrawn. Not a defect: it gets the withdrawal at once, the same answer
// as a retry a moment later (whose key finds the ended question), nothing
// is left waiting or recorded, and no second question is asked.
func TestRetryAtTheGracesEndGetsTheWithdrawal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := pending.New(pending.Options{})
		defer store.Close(t.Context())
		const grace = time.Minute
		s := newService(t, store, ask.Options{ReconnectGrace: grace})
		if err := store.Create(t.Context(), &pending.Question{ID: "que_1", Owner: "alpha", IdempotencyKey: "k1"}); err != nil {
			t.Fatal(err)
		}
		retried := make(chan *pending.Question, 1)
		hooked := false
		s.SetTestHooks(ask.TestHooks{BeforeWithdraw: func(id string) {
			hooked = true
			// The retry: its key finds the question pending, it attaches
			// and waits, all before the withdrawal.
			found, err := store.FindKey(t.Context(), "alpha", "k1")
			if err != nil || found.Ended != nil {
				t.Errorf("the retry's key found %+v, %v; want the pending question", found, err)
			}
			detach := s.Attach(id)
			go func() {
				defer detach(false)
				q, err := store.Wait(t.Context(), id)
				if err != nil {
					t.Errorf("the retry's wait: %v", err)
				}
				retried <- q
			}()
			time.Sleep(time.Nanosecond) // on the fake clock: once the retry waits
		}})
		s.Attach("que_1")(true) // the caller drops
		var got *pending.Question
		select {
		case got = <-retried:
		case <-time.After(2 * grace): // fake time: passes only if everything else is stuck
			t.Fatal("the retry that attached at the grace's end is still waiting")
		}
		if !hooked {
			t.Fatal("the retry did not come between the grace's end and the withdrawal")
		}
		if got.Ended == nil || got.Ended.Ending != pending.EndDisconnected {
			t.Fatalf("the retry got %+v; want the withdrawal", got.Ended)
		}
		later, err := store.FindKey(t.Context(), "alpha", "k1")
		if err != nil || later.Ended == nil || later.Ended.Ending != got.Ended.Ending || later.Ended.Result.Action != got.Ended.Result.Action {
			t.Fatalf("a retry a moment later finds %+v, %v; want the same ending", later, err)
		}
		synctest.Wait()
		if n := s.GraceRecords(); n != 0 {
			t.Fatalf("%d grace records left", n)
		}
		if list, _ := store.List(t.Context(), pending.Filter{}); len(list) != 0 {
			t.Fatalf("%d questions pending; want none", len(list))
		}
	})
}
