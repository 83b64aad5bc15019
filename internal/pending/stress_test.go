package pending_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// TestStress ends many questions from every side at once, on every kind of
// store: four settlers per question, a concurrent SettleAll, real deadlines
// (some already past), with waiters, Get and List running alongside.
// Whatever wins, each question must end exactly once, every waiter must see
// that ending, and a journal must hold it.
func TestStress(t *testing.T) {
	t.Parallel()
	for kind, newStore := range storeKinds {
		t.Run(kind, func(t *testing.T) { stress(t, newStore) })
	}
}

func stress(t *testing.T, newStore func(*testing.T, pending.Options) (*pending.Store, pending.Journal)) {
	ctx := t.Context()
	const questions, waitersEach = 300, 3
	var ends endLog
	m, journal := newStore(t, pending.Options{OnEnd: ends.record})
	var wins [questions]atomic.Int32 // successful Settle or SettleAll endings
	seen := make(chan *pending.Question, questions*waitersEach)
	idOf := func(i int) string { return fmt.Sprintf("que_%d", i) }

	list := func(f pending.Filter) {
		list, err := m.List(ctx, f)
		if err != nil {
			t.Errorf("list: %v", err)
			return
		}
		for _, q := range list {
			if !f.Matches(q) || q.Ended != nil {
				t.Errorf("list %+v returned %+v", f, q)
				return
			}
		}
	}

	var work sync.WaitGroup
	for i := range questions {
		work.Go(func() {
			q := ask(idOf(i), func(q *pending.Question) { q.Directory = fmt.Sprintf("/d%d", i%3) })
			if i%4 == 0 {
				q.Deadline = time.Now().Add(time.Duration(i%5-1) * time.Millisecond)
			}
			if err := m.Create(ctx, q); err != nil {
				t.Errorf("create: %v", err)
				return
			}
			var sides sync.WaitGroup
			for range waitersEach {
				sides.Go(func() {
					q, err := m.Wait(ctx, idOf(i))
					if err != nil {
						t.Errorf("wait: %v", err)
						return
					}
					seen <- q
				})
			}
			for _, o := range []pending.Outcome{replied("a"), cancelled(pending.EndRejected), cancelled(pending.EndWithdrawn), cancelled(pending.EndDisconnected)} {
				sides.Go(func() {
					_, err := m.Settle(ctx, idOf(i), o)
					switch {
					case err == nil:
						wins[i].Add(1)
					case !errors.Is(err, pending.ErrNotFound):
						t.Errorf("settle: %v", err)
					}
					if _, err := m.Get(ctx, idOf(i)); err != nil {
						t.Errorf("get after settle: %v", err)
					}
				})
			}
			filters := []pending.Filter{{}, {Directory: "/d1"}, {SessionID: "ses_1", Owner: "nobody"}}
			sides.Go(func() { list(filters[i%len(filters)]) })
			sides.Wait()
		})
	}
	work.Go(func() {
		all, err := m.SettleAll(ctx, cancelled(pending.EndShutdown))
		if err != nil {
			t.Errorf("settle all: %v", err)
		}
		for _, q := range all {
			var i int
			fmt.Sscanf(q.ID, "que_%d", &i)
			wins[i].Add(1)
		}
	})
	work.Wait()
	// A timer's OnEnd may still be running after its waiters woke; Close
	// waits for deadline callbacks.
	if err := m.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}

	if got := len(seen); got != questions*waitersEach {
		t.Fatalf("%d waiters returned, want %d", got, questions*waitersEach)
	}
	for range questions * waitersEach {
		q := <-seen
		if r := ends.last(q.ID); r == nil || r.Ended.Ending != q.Ended.Ending || !r.Ended.At.Equal(q.Ended.At) {
			t.Errorf("waiter on %s saw %+v, OnEnd saw %+v", q.ID, q.Ended, r)
		}
	}
	for i := range questions {
		id := idOf(i)
		if n := ends.count(id); n != 1 {
			t.Errorf("OnEnd(%s) called %d times, want 1", id, n)
			continue
		}
		timedOut := int32(0)
		if ends.last(id).Ended.Ending == pending.EndTimeout {
			timedOut = 1
		}
		if n := wins[i].Load() + timedOut; n != 1 {
			t.Errorf("%s ended %d times, want 1", id, n)
		}
	}
	if journal == nil {
		return
	}
	records := loadAll(t, journal)
	for i := range questions {
		id := idOf(i)
		r, reported := records[id], ends.last(id)
		if r == nil || r.Ended == nil || reported == nil || r.Ended.Ending != reported.Ended.Ending || !r.Ended.At.Equal(reported.Ended.At) {
			t.Errorf("journal holds %s as %+v, OnEnd saw %+v", id, r, reported)
		}
	}
}
