package pending_test

// Forced interleavings of a durable store. The fake journal parks a commit
// on a gate while the rival runs; each test names the guard it protects.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// parkPuts parks on g every commit that matches.
func parkPuts(j *fakeJournal, g *gate, match func(q *pending.Question) bool) {
	j.set(func(j *fakeJournal) {
		j.onPut = func(qs []*pending.Question) {
			for _, q := range qs {
				if match(q) {
					g.park()
					return
				}
			}
		}
	})
}

func isEndingOf(id string) func(*pending.Question) bool {
	return func(q *pending.Question) bool { return q.ID == id && q.Ended != nil }
}

func isCreationOf(id string) func(*pending.Question) bool {
	return func(q *pending.Question) bool { return q.ID == id && q.Ended == nil }
}

// Guard: no journal call is made under the store's lock. With the lock held
// across a commit, every other call waits for the disk.
func TestJournalCallsRunOutsideStoreLock(t *testing.T) {
	t.Parallel()
	ctx, j, m := journaled(t, pending.Options{})
	mustCreate(t, m, ask("que_other"))
	mustCreate(t, m, ask("que_ending"))
	g := newGate()
	defer g.open()
	parkPuts(j, g, func(q *pending.Question) bool { return q.ID == "que_creating" || q.ID == "que_ending" })

	created := make(chan error, 1)
	go func() { created <- m.Create(ctx, ask("que_creating")) }()
	ended := settleAsync(ctx, m, "que_ending", replied("Red"))
	g.await(2) // a creation and an ending are both inside the journal

	done := make(chan error, 1)
	go func() {
		if _, err := m.List(ctx, pending.Filter{}); err != nil {
			done <- fmt.Errorf("list: %w", err)
			return
		}
		if _, err := m.Get(ctx, "que_other"); err != nil {
			done <- fmt.Errorf("get: %w", err)
			return
		}
		if err := m.Create(ctx, ask("que_new")); err != nil {
			done <- fmt.Errorf("create: %w", err)
			return
		}
		if _, err := m.Settle(ctx, "que_other", replied("Blue")); err != nil {
			done <- fmt.Errorf("settle: %w", err)
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // only reached when the guard is gone
		t.Fatal("store calls blocked while two commits were parked in the journal")
	}
	g.open()
	if err := <-created; err != nil {
		t.Errorf("parked create: %v", err)
	}
	if r := <-ended; r.err != nil {
		t.Errorf("parked settle: %v", r.err)
	}
}

// Guard: the id is reserved while its creation commits. Without it, a second
// Create of the same id also commits, overwriting the first one's record,
// and then fails with ErrExists.
func TestCreateRacesCreateOfSameID(t *testing.T) {
	t.Parallel()
	ctx, j, m := journaled(t, pending.Options{})
	g := newGate()
	defer g.open()
	parkPuts(j, g, isCreationOf("que_1"))
	created := make(chan error, 1)
	go func() { created <- m.Create(ctx, ask("que_1", func(q *pending.Question) { q.Message = "first" })) }()
	g.await(1)

	j.set(func(j *fakeJournal) { j.onPut = nil })
	if err := m.Create(ctx, ask("que_1", func(q *pending.Question) { q.Message = "second" })); !errors.Is(err, pending.ErrExists) {
		t.Errorf("second create while the first commits: err = %v, want ErrExists", err)
	}
	if _, err := m.Get(ctx, "que_1"); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("get before the creation is committed: err = %v, want ErrNotFound", err)
	}
	g.open()
	if err := <-created; err != nil {
		t.Fatalf("first create: %v", err)
	}
	if q, _ := m.Get(ctx, "que_1"); q.Message != "first" || j.record("que_1").Message != "first" {
		t.Errorf("stored %q, journal %q; want the first create's", q.Message, j.record("que_1").Message)
	}
}

// Guard: the per-question settling semaphore, held from the pending check
// through the commit. Without it both endings commit, the journal keeps the
// loser's, and memory the winner's.
func TestDurableFirstEndingWins(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ends endLog
		ctx, j, m := journaled(t, pending.Options{OnEnd: ends.record})
		mustCreate(t, m, ask("que_1"))
		g := newGate()
		defer g.open() // a failed assertion must not leave a commit parked
		var committing atomic.Int32
		j.set(func(j *fakeJournal) {
			j.onPut = func(qs []*pending.Question) {
				if isEndingOf("que_1")(qs[0]) && committing.Add(1) == 1 {
					g.park()
				}
			}
		})
		first := settleAsync(ctx, m, "que_1", replied("first"))
		g.await(1)
		second := settleAsync(ctx, m, "que_1", cancelled(pending.EndRejected))
		synctest.Wait() // the rival is blocked, waiting for the first commit
		if n := committing.Load(); n != 1 || len(second) != 0 {
			t.Fatalf("while the first ending commits: %d commits started, rival returned %v; want 1 and the rival waiting", n, len(second) != 0)
		}
		g.open()
		if r := <-first; r.err != nil {
			t.Fatalf("first settle: %v", r.err)
		}
		if r := <-second; !errors.Is(r.err, pending.ErrNotFound) {
			t.Errorf("rival settle: err = %v, want ErrNotFound", r.err)
		}
		if n := committing.Load(); n != 1 {
			t.Errorf("%d endings committed, want 1", n)
		}
		if r := j.record("que_1"); r.Ended.Ending != pending.EndReplied || ends.count("que_1") != 1 {
			t.Errorf("journal holds %s, OnEnd called %d times; want replied, once", r.Ended.Ending, ends.count("que_1"))
		}
	})
}

// A rival waiting for another ending's commit gives up when its ctx ends,
// and changes nothing.
func TestDurableSettleWaitingGivesUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, m := journaled(t, pending.Options{})
		mustCreate(t, m, ask("que_1"))
		g := newGate()
		defer g.open() // a failed assertion must not leave a commit parked
		parkPuts(j, g, isEndingOf("que_1"))
		first := settleAsync(ctx, m, "que_1", replied("first"))
		g.await(1)
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := m.Settle(waitCtx, "que_1", cancelled(pending.EndRejected)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rival settle with a deadline: err = %v, want a deadline error", err)
		}
		g.open()
		if r := <-first; r.err != nil || r.q.Ended.Ending != pending.EndReplied {
			t.Errorf("first settle = %+v, %v; want the reply", r.q, r.err)
		}
	})
}

// Guard: Close waits for commits under way, and they finish normally, so
// what the journal holds is also what callers were told.
func TestCloseWaitsForCommits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ends endLog
		ctx, j, m := journaled(t, pending.Options{OnEnd: ends.record})
		mustCreate(t, m, ask("que_ending"))
		waited := waitAsync(ctx, m, "que_ending")
		synctest.Wait() // the waiter waits before Close begins, not after
		g := newGate()
		defer g.open() // a failed assertion must not leave a commit parked
		parkPuts(j, g, func(q *pending.Question) bool { return q.ID == "que_creating" || q.ID == "que_ending" })
		created := make(chan error, 1)
		go func() { created <- m.Create(ctx, ask("que_creating")) }()
		ended := settleAsync(ctx, m, "que_ending", replied("Red"))
		g.await(2)

		closed := make(chan error, 1)
		go func() { closed <- m.Close(ctx) }()
		synctest.Wait()
		if len(closed) != 0 {
			t.Fatal("close returned while commits were under way")
		}
		if _, err := m.Settle(ctx, "que_creating", replied("x")); !errors.Is(err, pending.ErrClosed) {
			t.Errorf("settle once close has begun: err = %v, want ErrClosed", err)
		}
		g.open()
		if err := <-created; err != nil {
			t.Errorf("create committed during close: %v", err)
		}
		if r := <-ended; r.err != nil {
			t.Errorf("settle committed during close: %v", r.err)
		}
		if r := <-waited; r.err != nil || r.q.Ended.Ending != pending.EndReplied {
			t.Errorf("waiter = %+v, %v; want the reply committed during close", r.q, r.err)
		}
		if err := <-closed; err != nil {
			t.Errorf("close: %v", err)
		}
		if n := ends.count("que_ending"); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
		if j.record("que_creating") == nil || j.record("que_ending").Ended == nil {
			t.Error("journal lacks what was committed during close")
		}
	})
}

// Guard: a Create waits while the janitor deletes the expired record of the
// same id. Without the wait, the deletion lands after the new record and
// erases it.
func TestCreateWaitsForSweepOfSameID(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, m := journaled(t, pending.Options{Retention: time.Hour})
		mustCreate(t, m, ask("que_1"))
		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatalf("settle: %v", err)
		}
		g := newGate()
		defer g.open() // a failed assertion must not leave a commit parked
		j.set(func(j *fakeJournal) { j.onDelete = func([]string) { g.park() } })
		time.Sleep(time.Hour) // expired, and the sweep starts
		g.await(1)

		createWaitsFor(t, createAgain(ctx, m, "que_1"), g, "sweep")
		expectCreatedAgain(t, j, "que_1")
	})
}

// Guard: the sweep leaves alone an expired question whose id a Create is
// committing. Without it, the sweep's deletion can land after the new record
// and erase it.
func TestSweepSparesIDBeingCreated(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, m := journaled(t, pending.Options{Retention: time.Hour})
		// The janitor ticks at 1h, 2h, 3h; the old question expires at 1h30.
		time.Sleep(30 * time.Minute)
		mustCreate(t, m, ask("que_1"))
		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatalf("settle: %v", err)
		}
		time.Sleep(75 * time.Minute) // 1h45: expired, not yet swept
		creating, deleting := newGate(), newGate()
		defer creating.open()
		defer deleting.open()
		parkPuts(j, creating, isCreationOf("que_1"))
		j.set(func(j *fakeJournal) { j.onDelete = func([]string) { deleting.park() } })
		created := createAgain(ctx, m, "que_1")
		creating.await(1)
		time.Sleep(30 * time.Minute) // 2h15: swept at 2h while the create commits
		synctest.Wait()
		creating.open()
		if err := <-created; err != nil {
			t.Fatalf("create: %v", err)
		}
		deleting.open()       // lets a deletion that should not exist land last
		time.Sleep(time.Hour) // 3h15: the old entry is dropped from memory
		synctest.Wait()
		if r := j.record("que_1"); r == nil || r.Message != "again" {
			t.Errorf("journal record = %+v, want the new question", r)
		}
		if q, err := m.Get(ctx, "que_1"); err != nil || q.Ended != nil || m.Held() != 1 {
			t.Errorf("get = %+v, %v (held %d); want the new question pending, alone", q, err, m.Held())
		}
	})
}
