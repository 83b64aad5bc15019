package pending_test

// Forced interleavings. Each test parks one goroutine inside an operation
// through a test hook, runs the rival to completion, then releases the parked
// one, so the race is decided the same way on every run. The comment on each
// test names the guard it protects; deleting that guard makes it fail.

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

// parkEndings parks on g the first n endings of kind how (of any kind when
// how is empty); later ones run straight through.
func parkEndings(m *pending.Store, g *gate, how pending.Ending, n int32) {
	var seen atomic.Int32
	m.SetOnSettleEntered(func(_ string, ending pending.Ending) {
		if how != "" && ending != how {
			return
		}
		if seen.Add(1) <= n {
			g.park()
		}
	})
}

type settled struct {
	q   *pending.Question
	err error
}

func settleAsync(ctx context.Context, m *pending.Store, id string, o pending.Outcome) <-chan settled {
	out := make(chan settled, 1)
	go func() {
		q, err := m.Settle(ctx, id, o)
		out <- settled{q, err}
	}()
	return out
}

// waitAsync runs m.Wait(ctx, id) in a goroutine; its result comes on the
// channel.
func waitAsync(ctx context.Context, m *pending.Store, id string) <-chan settled {
	out := make(chan settled, 1)
	go func() {
		q, err := m.Wait(ctx, id)
		out <- settled{q, err}
	}()
	return out
}

// Guard: the check-and-set of the outcome under the entry lock in decide
// ("if e.outcome != nil"), and with a journal the settling semaphore around
// the check and the commit. Without them the loser closes done a second time
// (a panic) and OnEnd runs twice.
func TestFirstEndingWins(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ parked, rival pending.Outcome }{
		"reply vs reply":        {replied("first"), replied("second")},
		"reject vs withdraw":    {cancelled(pending.EndRejected), cancelled(pending.EndWithdrawn)},
		"withdraw vs reject":    {cancelled(pending.EndWithdrawn), cancelled(pending.EndRejected)},
		"reply vs disconnect":   {replied("first"), cancelled(pending.EndDisconnected)},
		"disconnect vs reply":   {cancelled(pending.EndDisconnected), replied("second")},
		"reject vs shutdown":    {cancelled(pending.EndRejected), cancelled(pending.EndShutdown)},
		"timeout vs reply":      {cancelled(pending.EndTimeout), replied("second")},
		"reply vs reject":       {replied("first"), cancelled(pending.EndRejected)},
		"withdraw vs withdraw":  {cancelled(pending.EndWithdrawn), cancelled(pending.EndWithdrawn)},
		"disconnect vs timeout": {cancelled(pending.EndDisconnected), cancelled(pending.EndTimeout)},
	}
	for kind, newStore := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			for name, tt := range tests {
				t.Run(name+", rival runs while the first is parked", func(t *testing.T) {
					ctx := t.Context()
					var ends endLog
					m, _ := newStore(t, pending.Options{OnEnd: ends.record})
					mustCreate(t, m, ask("que_1"))
					g := newGate()
					parkEndings(m, g, "", 1)

					first := settleAsync(ctx, m, "que_1", tt.parked)
					g.await(1)
					if _, err := m.Settle(ctx, "que_1", tt.rival); err != nil {
						t.Fatalf("rival settle: %v", err)
					}
					g.open()
					if r := <-first; !errors.Is(r.err, pending.ErrNotFound) {
						t.Errorf("parked settle: err = %v, want ErrNotFound", r.err)
					}
					if n := ends.count("que_1"); n != 1 {
						t.Errorf("OnEnd called %d times, want 1", n)
					}
					if q, _ := m.Get(ctx, "que_1"); q.Ended.Ending != tt.rival.Ending || fmt.Sprint(q.Ended.Answers) != fmt.Sprint(tt.rival.Answers) {
						t.Errorf("stored ending %+v, want the rival's %+v", q.Ended, tt.rival)
					}
				})
				t.Run(name+", both released together", func(t *testing.T) {
					ctx := t.Context()
					var ends endLog
					m, _ := newStore(t, pending.Options{OnEnd: ends.record})
					mustCreate(t, m, ask("que_1"))
					g := newGate()
					parkEndings(m, g, "", 2)

					a := settleAsync(ctx, m, "que_1", tt.parked)
					b := settleAsync(ctx, m, "que_1", tt.rival)
					g.await(2)
					g.open()
					ra, rb := <-a, <-b
					winner := ra
					if ra.err != nil {
						winner = rb
					}
					if (ra.err == nil) == (rb.err == nil) {
						t.Fatalf("errors %v and %v, want exactly one winner", ra.err, rb.err)
					}
					for _, err := range []error{ra.err, rb.err} {
						if err != nil && !errors.Is(err, pending.ErrNotFound) {
							t.Errorf("loser: err = %v, want ErrNotFound", err)
						}
					}
					if n := ends.count("que_1"); n != 1 {
						t.Errorf("OnEnd called %d times, want 1", n)
					}
					if q, _ := m.Get(ctx, "que_1"); q.Ended.Ending != winner.q.Ended.Ending || !q.Ended.At.Equal(winner.q.Ended.At) {
						t.Errorf("stored ending %+v, want the winner's %+v", q.Ended, winner.q.Ended)
					}
				})
			}
		})
	}
}

// Guard: the check-and-set in end, met by the deadline's callback, and the
// callback reporting nothing when it loses. Without the check the losing side
// closes done a second time. (timer.Stop in end only saves the late callback
// a trip through that check; this test cannot see it.)
func TestReplyRacesTimeout(t *testing.T) {
	t.Parallel()
	t.Run("timer parked, reply wins", func(t *testing.T) {
		ctx, m, ends := recording(t)
		g := newGate()
		parkEndings(m, g, pending.EndTimeout, 1)
		mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(-time.Second) }))
		g.await(1) // the timer fired and is inside end

		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatalf("reply: %v", err)
		}
		g.open()
		// Close waits for the deadline callback to return.
		if err := m.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		if n := ends.count("que_1"); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
		if r := ends.last("que_1"); r.Ended.Ending != pending.EndReplied {
			t.Errorf("OnEnd got %s, want replied", r.Ended.Ending)
		}
	})
	t.Run("reply parked, timer wins", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, m, ends := recording(t)
			g := newGate()
			parkEndings(m, g, pending.EndReplied, 1)
			mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
			reply := settleAsync(ctx, m, "que_1", replied("Red"))
			g.await(1)

			time.Sleep(time.Minute)
			synctest.Wait()
			if n := ends.count("que_1"); n != 1 || ends.last("que_1").Ended.Ending != pending.EndTimeout {
				t.Fatalf("after the deadline OnEnd was called %d times, want once with timeout", n)
			}
			g.open()
			if r := <-reply; !errors.Is(r.err, pending.ErrNotFound) {
				t.Errorf("late reply: err = %v, want ErrNotFound", r.err)
			}
			if n := ends.count("que_1"); n != 1 {
				t.Errorf("OnEnd called %d times, want 1", n)
			}
		})
	})
}

// Guard: SettleAll treats an ErrNotFound from end as a lost race and skips
// the question, and end's check-and-set keeps the loser from reporting.
// Without the skip SettleAll fails when a rival got there first.
func TestSettleRacesSettleAll(t *testing.T) {
	t.Parallel()
	t.Run("settle parked, settle all wins", func(t *testing.T) {
		ctx, m, ends := recording(t)
		for _, id := range []string{"que_1", "que_2", "que_3"} {
			mustCreate(t, m, ask(id))
		}
		g := newGate()
		parkEndings(m, g, pending.EndReplied, 1)
		reply := settleAsync(ctx, m, "que_2", replied("Red"))
		g.await(1)

		all, err := m.SettleAll(ctx, cancelled(pending.EndShutdown))
		if err != nil || len(all) != 3 {
			t.Fatalf("settle all = %v, %v; want all three", ids(all), err)
		}
		g.open()
		if r := <-reply; !errors.Is(r.err, pending.ErrNotFound) {
			t.Errorf("parked reply: err = %v, want ErrNotFound", r.err)
		}
		if n := ends.total(); n != 3 || ends.count("que_2") != 1 {
			t.Errorf("OnEnd called %d times (%d for que_2), want 3 (1)", n, ends.count("que_2"))
		}
	})
	t.Run("settle all parked on one question, settle wins it", func(t *testing.T) {
		ctx, m, ends := recording(t)
		for _, id := range []string{"que_1", "que_2", "que_3"} {
			mustCreate(t, m, ask(id))
		}
		g := newGate()
		var shutdowns atomic.Int32
		m.SetOnSettleEntered(func(id string, how pending.Ending) {
			if how == pending.EndShutdown && id == "que_2" && shutdowns.Add(1) == 1 {
				g.park()
			}
		})
		type allResult struct {
			qs  []*pending.Question
			err error
		}
		allDone := make(chan allResult, 1)
		go func() {
			qs, err := m.SettleAll(ctx, cancelled(pending.EndShutdown))
			allDone <- allResult{qs, err}
		}()
		g.await(1)

		if _, err := m.Settle(ctx, "que_2", replied("Red")); err != nil {
			t.Fatalf("reply: %v", err)
		}
		g.open()
		r := <-allDone
		if r.err != nil || fmt.Sprint(ids(r.qs)) != "[que_1 que_3]" {
			t.Errorf("settle all = %v, %v; want [que_1 que_3] and no error", ids(r.qs), r.err)
		}
		if n := ends.total(); n != 3 || ends.last("que_2").Ended.Ending != pending.EndReplied {
			t.Errorf("OnEnd called %d times, want 3 with que_2 replied", n)
		}
	})
}

// Guard: end checks closed under the store's read lock before deciding, and
// Close waits for deadline callbacks already running. Without the check the
// parked settle ends a question of a closed store and reports it; without
// the wait Close returns while a callback is still inside the store.
func TestSettleRacesClose(t *testing.T) {
	t.Parallel()
	t.Run("settle parked, close wins", func(t *testing.T) {
		ctx, m, ends := recording(t)
		mustCreate(t, m, ask("que_1"))
		g := newGate()
		parkEndings(m, g, "", 1)
		reply := settleAsync(ctx, m, "que_1", replied("Red"))
		g.await(1)

		if err := m.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		g.open()
		if r := <-reply; !errors.Is(r.err, pending.ErrClosed) {
			t.Errorf("parked settle: err = %v, want ErrClosed", r.err)
		}
		if n := ends.total(); n != 0 {
			t.Errorf("OnEnd called %d times, want 0", n)
		}
	})
	t.Run("timer parked, close waits for it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, m, ends := recording(t)
			g := newGate()
			parkEndings(m, g, pending.EndTimeout, 1)
			mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
			time.Sleep(time.Minute)
			g.await(1)

			closed := make(chan error, 1)
			go func() { closed <- m.Close(ctx) }()
			synctest.Wait()
			select {
			case err := <-closed:
				t.Fatalf("close returned (%v) while a deadline callback was running", err)
			default:
			}
			g.open()
			if err := <-closed; err != nil {
				t.Fatalf("close: %v", err)
			}
			if n := ends.total(); n != 0 {
				t.Errorf("OnEnd called %d times, want 0: the timer lost to Close", n)
			}
		})
	})
}

// Guard: when a waiter's ctx has ended, Wait looks at done once more before
// returning the ctx error. Without that second look, a waiter whose question
// ended while its ctx also ended gets the ctx error about half the time (the
// select picks at random), and this test, which repeats the race, fails.
// The second half guards that a leaving waiter ends nothing.
func TestWaitCancelRacesSettle(t *testing.T) {
	t.Parallel()
	t.Run("ended while the waiter gave up", func(t *testing.T) {
		ctx, m, ends := recording(t)
		const rounds = 64
		gates := make(map[string]*gate, rounds)
		for i := range rounds {
			gates[fmt.Sprintf("que_%d", i)] = newGate()
		}
		m.SetOnWaitEntered(func(id string) { gates[id].park() })

		for i := range rounds {
			id := fmt.Sprintf("que_%d", i)
			mustCreate(t, m, ask(id))
			waitCtx, cancel := context.WithCancel(ctx)
			waited := waitAsync(waitCtx, m, id)
			gates[id].await(1)
			cancel()
			if _, err := m.Settle(ctx, id, replied("Red")); err != nil {
				t.Fatalf("settle %s: %v", id, err)
			}
			gates[id].open()
			if r := <-waited; r.err != nil || r.q.Ended.Ending != pending.EndReplied {
				t.Fatalf("round %d: waiter got %+v, %v; want the reply", i, r.q, r.err)
			}
		}
		if n := ends.total(); n != rounds {
			t.Errorf("OnEnd called %d times, want %d", n, rounds)
		}
	})
	t.Run("gave up before the ending", func(t *testing.T) {
		ctx, m, ends := recording(t)
		mustCreate(t, m, ask("que_1"))
		g := newGate()
		m.SetOnWaitEntered(func(string) { g.park() })
		waitCtx, cancel := context.WithCancel(ctx)
		waited := waitAsync(waitCtx, m, "que_1")
		g.await(1)
		cancel()
		g.open()
		if r := <-waited; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("waiter: %+v, %v; want context.Canceled", r.q, r.err)
		}
		if q, _ := m.Get(ctx, "que_1"); q.Ended != nil || ends.total() != 0 {
			t.Fatalf("the waiter leaving ended the question: %+v", q.Ended)
		}
		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Errorf("settle after the waiter left: %v", err)
		}
		if n := ends.count("que_1"); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
	})
}
