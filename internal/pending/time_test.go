package pending_test

// Tests that depend on the clock run in a testing/synctest bubble: time.Sleep
// there advances a fake clock once every goroutine in the bubble is blocked,
// so deadlines, retention and the janitor are exact and instant.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

func TestRetention(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		option, want time.Duration
	}{
		"default": {0, time.Hour},
		"custom":  {10 * time.Minute, 10 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				m := newStore(t, pending.Options{Retention: tt.option})
				mustCreate(t, m, ask("que_1"))
				if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
					t.Fatalf("settle: %v", err)
				}

				time.Sleep(tt.want - time.Nanosecond)
				if q, err := m.Get(ctx, "que_1"); err != nil || q.Ended == nil {
					t.Errorf("get just before retention ends = %+v, %v; want the ended question", q, err)
				}
				if q, err := m.Wait(ctx, "que_1"); err != nil || q.Ended.Ending != pending.EndReplied {
					t.Errorf("wait just before retention ends = %+v, %v; want the reply", q, err)
				}

				time.Sleep(time.Nanosecond)
				if _, err := m.Get(ctx, "que_1"); !errors.Is(err, pending.ErrNotFound) {
					t.Errorf("get after retention: err = %v, want ErrNotFound", err)
				}
				if _, err := m.Wait(ctx, "que_1"); !errors.Is(err, pending.ErrNotFound) {
					t.Errorf("wait after retention: err = %v, want ErrNotFound", err)
				}
				if _, err := m.Settle(ctx, "que_1", replied("Blue")); !errors.Is(err, pending.ErrNotFound) {
					t.Errorf("settle after retention: err = %v, want ErrNotFound", err)
				}
				// Forgotten means the id is free again.
				mustCreate(t, m, ask("que_1"))
				expectPending(t, ctx, m, "que_1", "re-created question")
			})
		})
	}
}

func TestJanitorForgetsEndedQuestions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := newStore(t, pending.Options{Retention: time.Hour})
		mustCreate(t, m, ask("que_pending"))
		for _, id := range []string{"que_1", "que_2", "que_3"} {
			mustCreate(t, m, ask(id))
			if _, err := m.Settle(ctx, id, cancelled(pending.EndRejected)); err != nil {
				t.Fatalf("settle: %v", err)
			}
		}
		// Expired at 1h, swept by the tick at 2h at the latest.
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if n := m.Held(); n != 1 {
			t.Errorf("store holds %d questions after the sweep, want only the pending one", n)
		}
		expectPending(t, ctx, m, "que_pending", "pending question after the sweep")
	})
}

// Guard: the janitor deletes by entry identity, not by id. Without it, the
// sweep of an expired question removes the newer question that took its id.
func TestJanitorSparesNewerQuestionWithSameID(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := newStore(t, pending.Options{Retention: time.Hour})
		// The janitor ticks at 1h and 2h; the old question expires at 1h30.
		time.Sleep(30 * time.Minute)
		mustCreate(t, m, ask("que_1"))
		if _, err := m.Settle(ctx, "que_1", cancelled(pending.EndRejected)); err != nil {
			t.Fatalf("settle: %v", err)
		}
		time.Sleep(75 * time.Minute) // 1h45: expired, not yet swept
		mustCreate(t, m, ask("que_1"))
		time.Sleep(30 * time.Minute) // 2h15: swept at 2h
		synctest.Wait()

		if q, err := m.Get(ctx, "que_1"); err != nil || q.Ended != nil {
			t.Fatalf("newer question after the sweep = %+v, %v; want it pending", q, err)
		}
		if n := m.Held(); n != 1 {
			t.Errorf("store holds %d questions, want 1", n)
		}
	})
}

func TestDeadlineTimesOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, m, ends := recording(t)
		deadline := time.Now().Add(10 * time.Minute)
		mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = deadline }))
		waited := make(chan *pending.Question, 1)
		go func() {
			q, err := m.Wait(ctx, "que_1")
			if err != nil {
				t.Errorf("wait: %v", err)
			}
			waited <- q
		}()

		time.Sleep(10*time.Minute - time.Nanosecond)
		synctest.Wait()
		if q, _ := m.Get(ctx, "que_1"); q.Ended != nil || ends.total() != 0 {
			t.Fatalf("question ended before its deadline: %+v", q.Ended)
		}

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		want := pending.Outcome{Ending: pending.EndTimeout, Result: pending.Result{Action: pending.ActionCancel}, At: deadline}
		if n := ends.count("que_1"); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
		if r := ends.last("que_1"); r == nil || !sameOutcome(r.Ended, want) {
			t.Errorf("OnEnd got %+v, want %+v", r, want)
		}
		if q := <-waited; !sameOutcome(q.Ended, want) {
			t.Errorf("waiter got %+v, want %+v", q.Ended, want)
		}
		if l, _ := m.List(ctx, pending.Filter{}); len(l) != 0 {
			t.Errorf("list after timeout = %v, want empty", ids(l))
		}
		if _, err := m.Settle(ctx, "que_1", replied("late")); !errors.Is(err, pending.ErrNotFound) {
			t.Errorf("reply after timeout: err = %v, want ErrNotFound", err)
		}
	})
}

func TestDeadlineInThePast(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, m, ends := recording(t)
		mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(-time.Minute) }))
		synctest.Wait() // no clock advance: "promptly" means now
		if n := ends.count("que_1"); n != 1 {
			t.Fatalf("OnEnd called %d times, want 1", n)
		}
		if q, err := m.Get(ctx, "que_1"); err != nil || q.Ended.Ending != pending.EndTimeout || q.Ended.Result.Action != pending.ActionCancel {
			t.Errorf("question with a past deadline = %+v, %v; want timed out", q, err)
		}
	})
}

func TestEndingDisarmsDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, m, ends := recording(t)
		mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(10 * time.Minute) }))
		time.Sleep(5 * time.Minute)
		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatalf("settle: %v", err)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := ends.count("que_1"); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
		if q, _ := m.Get(ctx, "que_1"); q.Ended.Ending != pending.EndReplied {
			t.Errorf("ending = %s, want replied", q.Ended.Ending)
		}
	})
}

func TestWaitWakesEveryWaiter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		m := newStore(t, pending.Options{})
		mustCreate(t, m, ask("que_1"))
		const waiters = 5
		got := make(chan *pending.Question, waiters)
		for range waiters {
			go func() {
				q, err := m.Wait(ctx, "que_1")
				if err != nil {
					t.Errorf("wait: %v", err)
				}
				got <- q
			}()
		}
		synctest.Wait()
		if len(got) != 0 {
			t.Fatalf("%d waiters returned before the question ended", len(got))
		}
		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatalf("settle: %v", err)
		}
		for range waiters {
			if q := <-got; q.Ended == nil || q.Ended.Ending != pending.EndReplied {
				t.Errorf("waiter got %+v, want the reply", q)
			}
		}
	})
}

// A waiter giving up gets its ctx's error and leaves the question, and every
// other waiter on it, as they were.
func TestWaitGivesUpAlone(t *testing.T) {
	t.Parallel()
	cause := errors.New("agent went away")
	// giveUp returns the waiter's ctx, a func that makes it end now (or
	// nothing, when its deadline will end it), and a func releasing it.
	tests := map[string]struct {
		giveUp func(context.Context) (ctx context.Context, stop, release func())
		want   []error
	}{
		"cancelled": {
			func(ctx context.Context) (context.Context, func(), func()) {
				ctx, cancel := context.WithCancel(ctx)
				return ctx, cancel, cancel
			},
			[]error{context.Canceled},
		},
		"deadline": {
			func(ctx context.Context) (context.Context, func(), func()) {
				ctx, cancel := context.WithTimeout(ctx, time.Minute)
				return ctx, func() {}, cancel
			},
			[]error{context.DeadlineExceeded},
		},
		"cancelled with a cause": {
			func(ctx context.Context) (context.Context, func(), func()) {
				ctx, cancel := context.WithCancelCause(ctx)
				return ctx, func() { cancel(cause) }, func() { cancel(nil) }
			},
			[]error{context.Canceled, cause},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, m, ends := recording(t)
				mustCreate(t, m, ask("que_1"))
				stayed := make(chan *pending.Question, 1)
				go func() {
					q, err := m.Wait(ctx, "que_1")
					if err != nil {
						t.Errorf("staying waiter: %v", err)
					}
					stayed <- q
				}()

				waitCtx, stop, release := tt.giveUp(ctx)
				defer release()
				left := make(chan error, 1)
				go func() {
					_, err := m.Wait(waitCtx, "que_1")
					left <- err
				}()
				synctest.Wait()
				stop() // the deadline case ends by itself a minute later
				time.Sleep(time.Minute)
				err := <-left
				for _, want := range tt.want {
					if !errors.Is(err, want) {
						t.Errorf("wait: err = %v, want it to wrap %v", err, want)
					}
				}

				synctest.Wait()
				if q, _ := m.Get(ctx, "que_1"); q.Ended != nil || ends.total() != 0 || len(stayed) != 0 {
					t.Fatalf("a waiter leaving ended the question: %+v", q.Ended)
				}
				if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
					t.Fatalf("settle after the waiter left: %v", err)
				}
				if q := <-stayed; q.Ended.Ending != pending.EndReplied {
					t.Errorf("staying waiter got %+v, want the reply", q.Ended)
				}
			})
		})
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, m, ends := recording(t)
		mustCreate(t, m, ask("que_timed", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		mustCreate(t, m, ask("que_plain"))
		waited := make(chan error, 1)
		go func() {
			_, err := m.Wait(ctx, "que_plain")
			waited <- err
		}()
		synctest.Wait()

		if err := m.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		if err := <-waited; !errors.Is(err, pending.ErrClosed) {
			t.Errorf("waiter blocked during close: err = %v, want ErrClosed", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := ends.total(); n != 0 {
			t.Errorf("OnEnd called %d times after close, want 0: close must not end questions", n)
		}

		calls := map[string]func() error{
			"create":     func() error { return m.Create(ctx, ask("que_new")) },
			"get":        func() error { _, err := m.Get(ctx, "que_plain"); return err },
			"list":       func() error { _, err := m.List(ctx, pending.Filter{}); return err },
			"settle":     func() error { _, err := m.Settle(ctx, "que_plain", replied("a")); return err },
			"wait":       func() error { _, err := m.Wait(ctx, "que_plain"); return err },
			"settle all": func() error { _, err := m.SettleAll(ctx, cancelled(pending.EndShutdown)); return err },
			"close":      func() error { return m.Close(ctx) },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, pending.ErrClosed) {
				t.Errorf("%s after close: err = %v, want ErrClosed", name, err)
			}
		}
	})
}

func sameOutcome(got *pending.Outcome, want pending.Outcome) bool {
	return got != nil && got.Ending == want.Ending && got.Result.Action == want.Result.Action &&
		len(got.Result.Content) == 0 && got.At.Equal(want.At)
}

// After StopTimeouts a deadline ends nothing: the question stays pending
// (a durable store's next start times it out, and announces that), while
// replies still work and a closed store refuses the call.
func TestStopTimeoutsLeavesOverdueQuestionsPending(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, m, ends := recording(t)
		for _, id := range []string{"que_1", "que_2"} {
			mustCreate(t, m, ask(id, func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		}
		if err := m.StopTimeouts(ctx); err != nil {
			t.Fatalf("stop timeouts: %v", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := ends.total(); n != 0 {
			t.Fatalf("%d questions ended after StopTimeouts, want none", n)
		}
		if l, _ := m.List(ctx, pending.Filter{}); len(l) != 2 {
			t.Fatalf("pending after the deadline = %v, want both", ids(l))
		}
		if _, err := m.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatalf("a reply after StopTimeouts: %v", err)
		}
		if n := ends.count("que_1"); n != 1 {
			t.Errorf("OnEnd called %d times for the reply, want 1", n)
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.StopTimeouts(ctx); !errors.Is(err, pending.ErrClosed) {
			t.Errorf("StopTimeouts on a closed store: %v, want ErrClosed", err)
		}
	})
}

// A timeout that is already ending when StopTimeouts is called has ended,
// and been reported, by the time StopTimeouts returns.
func TestStopTimeoutsWaitsForATimeoutUnderWay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		entered, release := make(chan struct{}), make(chan struct{})
		m := newStore(t, pending.Options{OnEnd: func(*pending.Question) {
			close(entered)
			<-release
		}})
		mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		time.Sleep(time.Minute)
		<-entered // the timeout is reporting its ending
		stopped := make(chan error, 1)
		go func() { stopped <- m.StopTimeouts(ctx) }()
		synctest.Wait()
		select {
		case err := <-stopped:
			t.Fatalf("StopTimeouts returned (%v) while a timeout was still reporting", err)
		default:
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatalf("stop timeouts: %v", err)
		}
	})
}
