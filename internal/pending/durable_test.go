package pending_test

// A store with a journal, through the fake: commit before acknowledge,
// failures that change nothing, restores, and the janitor's deletions.

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

func TestNewMemoryRefusesJournal(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("New with a journal did not panic")
		}
	}()
	pending.New(pending.Options{Journal: newFakeJournal()})
}

func TestOpenNeedsJournal(t *testing.T) {
	t.Parallel()
	if _, err := pending.Open(t.Context(), pending.Options{}); !errors.Is(err, pending.ErrInvalid) {
		t.Errorf("open without a journal: err = %v, want ErrInvalid", err)
	}
}

func TestOpenFailsWhenLoadFails(t *testing.T) {
	t.Parallel()
	j := newFakeJournal()
	j.Close()
	if _, err := pending.Open(t.Context(), pending.Options{Journal: j}); !errors.Is(err, pending.ErrUnavailable) {
		t.Errorf("open on a failing journal: err = %v, want ErrUnavailable", err)
	}
}

func TestCreateCommitsFirst(t *testing.T) {
	t.Parallel()
	ctx, j, m := journaled(t, pending.Options{})
	mustCreate(t, m, ask("que_1"))
	if r := j.record("que_1"); r == nil || r.Ended != nil || r.CreatedAt.IsZero() {
		t.Fatalf("record after create = %+v, want the pending question with its CreatedAt", r)
	}

	j.set(func(j *fakeJournal) { j.failPut = failAlways })
	err := m.Create(ctx, ask("que_2"))
	if !errors.Is(err, pending.ErrUnavailable) {
		t.Fatalf("create on a failing journal: err = %v, want ErrUnavailable", err)
	}
	if l, _ := m.List(ctx, pending.Filter{}); fmt.Sprint(ids(l)) != "[que_1]" {
		t.Errorf("list after a failed create = %v, want [que_1]", ids(l))
	}
	if _, err := m.Get(ctx, "que_2"); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("get after a failed create: err = %v, want ErrNotFound", err)
	}
	if j.record("que_2") != nil {
		t.Error("a failed create left a record")
	}

	// The failure released the id.
	j.set(func(j *fakeJournal) { j.failPut = nil })
	mustCreate(t, m, ask("que_2"))
	if l, _ := m.List(ctx, pending.Filter{}); fmt.Sprint(ids(l)) != "[que_1 que_2]" {
		t.Errorf("list = %v, want [que_1 que_2]", ids(l))
	}
}

func TestSettleFailureChangesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ends endLog
		ctx, j, m := journaled(t, pending.Options{OnEnd: ends.record})
		mustCreate(t, m, ask("que_1"))
		waited := waitAsync(ctx, m, "que_1")

		j.set(func(j *fakeJournal) { j.failPut = failEndingsOf("que_1", 1) })
		if _, err := m.Settle(ctx, "que_1", replied("Red")); !errors.Is(err, pending.ErrUnavailable) {
			t.Fatalf("settle on a failing journal: err = %v, want ErrUnavailable", err)
		}
		synctest.Wait()
		if len(waited) != 0 {
			t.Fatal("a failed settle woke the waiter")
		}
		if q, _ := m.Get(ctx, "que_1"); q.Ended != nil {
			t.Errorf("question after a failed settle: %+v, want pending", q.Ended)
		}
		if l, _ := m.List(ctx, pending.Filter{}); len(l) != 1 {
			t.Errorf("list after a failed settle = %v, want the question", ids(l))
		}
		if r := j.record("que_1"); r.Ended != nil {
			t.Errorf("record after a failed settle: %+v, want pending", r.Ended)
		}
		if n := ends.total(); n != 0 {
			t.Errorf("OnEnd called %d times after a failed settle, want 0", n)
		}

		if _, err := m.Settle(ctx, "que_1", cancelled(pending.EndRejected)); err != nil {
			t.Fatalf("settle once the journal works: %v", err)
		}
		if r := <-waited; r.err != nil || r.q.Ended.Ending != pending.EndRejected {
			t.Errorf("waiter got %+v, %v; want the rejection", r.q, r.err)
		}
		if r := j.record("que_1"); r.Ended == nil || r.Ended.Ending != pending.EndRejected {
			t.Errorf("record = %+v, want rejected", r.Ended)
		}
		if _, err := m.Settle(ctx, "que_1", replied("late")); !errors.Is(err, pending.ErrNotFound) {
			t.Errorf("second settle: err = %v, want ErrNotFound", err)
		}
		if n := ends.count("que_1"); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
	})
}

func TestSettleAllStopsAtFailedCommit(t *testing.T) {
	t.Parallel()
	var ends endLog
	ctx, j, m := journaled(t, pending.Options{OnEnd: ends.record})
	for _, id := range []string{"que_1", "que_2", "que_3"} {
		mustCreate(t, m, ask(id))
	}
	j.set(func(j *fakeJournal) { j.failPut = failEndingsOf("que_2", 1) })
	all, err := m.SettleAll(ctx, cancelled(pending.EndShutdown))
	if !errors.Is(err, pending.ErrUnavailable) || fmt.Sprint(ids(all)) != "[que_1]" {
		t.Fatalf("settle all = %v, %v; want [que_1] and ErrUnavailable", ids(all), err)
	}
	if l, _ := m.List(ctx, pending.Filter{}); fmt.Sprint(ids(l)) != "[que_2 que_3]" {
		t.Errorf("still pending: %v, want [que_2 que_3]", ids(l))
	}
	all, err = m.SettleAll(ctx, cancelled(pending.EndShutdown))
	if err != nil || fmt.Sprint(ids(all)) != "[que_2 que_3]" {
		t.Errorf("second settle all = %v, %v; want [que_2 que_3]", ids(all), err)
	}
	if n := ends.total(); n != 3 {
		t.Errorf("OnEnd called %d times, want 3", n)
	}
}

func TestTimeoutCommitIsRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ends endLog
		ctx, j, m := journaled(t, pending.Options{OnEnd: ends.record})
		j.set(func(j *fakeJournal) { j.failPut = failEndingsOf("que_1", 3) })
		mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		putsBefore := j.count("put")

		time.Sleep(time.Minute)
		synctest.Wait()
		if q, _ := m.Get(ctx, "que_1"); q.Ended != nil || ends.total() != 0 {
			t.Fatalf("timed out although its commit failed: %+v", q.Ended)
		}
		// Retries after 100ms, 200ms and 400ms; the third succeeds.
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		if q, _ := m.Get(ctx, "que_1"); q.Ended != nil {
			t.Fatalf("timed out at the second retry, which fails: %+v", q.Ended)
		}
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		q, err := m.Get(ctx, "que_1")
		if err != nil || q.Ended == nil || q.Ended.Ending != pending.EndTimeout {
			t.Fatalf("after the retries = %+v, %v; want timed out", q, err)
		}
		if n := j.count("put") - putsBefore; n != 4 {
			t.Errorf("%d commits tried, want 4", n)
		}
		if n := ends.count("que_1"); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
		if r := j.record("que_1"); r.Ended == nil || r.Ended.Ending != pending.EndTimeout {
			t.Errorf("record = %+v, want timed out", r.Ended)
		}
	})
}

// A retry armed for a failed timeout commit dies with the store.
func TestCloseStopsTimeoutRetry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ends endLog
		_, j, m := journaled(t, pending.Options{OnEnd: ends.record})
		j.set(func(j *fakeJournal) { j.failPut = failEndingsOf("que_1", 1) })
		mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		time.Sleep(time.Minute)
		synctest.Wait()
		puts := j.count("put")
		if err := m.Close(t.Context()); err != nil {
			t.Fatalf("close: %v", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := j.count("put"); n != puts || ends.total() != 0 {
			t.Errorf("after close: %d more commits, %d endings; want none", n-puts, ends.total())
		}
	})
}

func TestOpenRestoresFromJournal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		j := newFakeJournal()
		first, err := pending.Open(ctx, pending.Options{Journal: j})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		deadline := time.Now().Add(10 * time.Minute)
		mustCreate(t, first, ask("que_timed", func(q *pending.Question) { q.Deadline = deadline }))
		time.Sleep(time.Second)
		mustCreate(t, first, ask("que_plain", func(q *pending.Question) { q.Directory = "/work" }))
		mustCreate(t, first, ask("que_replied"))
		if _, err := first.Settle(ctx, "que_replied", replied("Red")); err != nil {
			t.Fatalf("settle: %v", err)
		}
		if err := first.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}

		time.Sleep(5 * time.Minute) // down for five minutes
		var ends endLog
		m := openStore(t, j, pending.Options{OnEnd: ends.record})
		l, err := m.List(ctx, pending.Filter{})
		if err != nil || fmt.Sprint(ids(l)) != "[que_timed que_plain]" {
			t.Fatalf("list after restore = %v, %v; want [que_timed que_plain]", ids(l), err)
		}
		if !l[0].Deadline.Equal(deadline) || l[1].Directory != "/work" || l[0].Form != nil {
			t.Errorf("restored questions %+v, %+v; want the deadline and directory kept, no form", l[0], l[1])
		}
		if q, err := m.Wait(ctx, "que_replied"); err != nil || q.Ended.Ending != pending.EndReplied || q.Ended.Answers[0][0] != "Red" {
			t.Errorf("wait for the replied question = %+v, %v; want its reply", q, err)
		}

		// The deadline kept counting while the store was down.
		time.Sleep(5*time.Minute - time.Second - time.Nanosecond)
		synctest.Wait()
		if ends.total() != 0 {
			t.Fatal("timed out before its deadline")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if r := ends.last("que_timed"); r == nil || r.Ended.Ending != pending.EndTimeout || !r.Ended.At.Equal(deadline) {
			t.Errorf("OnEnd got %+v, want a timeout at %v", r, deadline)
		}
		if n := ends.total(); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
	})
}

// Questions whose deadline passed while no store ran end as timeouts when
// the store opens: committed first, then reported once, before Open returns.
func TestOpenTimesOutOverdueQuestions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, first := journaled(t, pending.Options{})
		mustCreate(t, first, ask("que_overdue", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		mustCreate(t, first, ask("que_plain"))
		if err := first.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		time.Sleep(time.Hour)

		var ends endLog
		onEnd := func(q *pending.Question) {
			if r := j.record(q.ID); r == nil || r.Ended == nil {
				t.Errorf("OnEnd(%s) before its ending was committed", q.ID)
			}
			ends.record(q)
		}
		opened := time.Now()
		m := openStore(t, j, pending.Options{OnEnd: onEnd})
		if r := ends.last("que_overdue"); ends.total() != 1 || r.Ended.Ending != pending.EndTimeout ||
			r.Ended.Result.Action != pending.ActionCancel || !r.Ended.At.Equal(opened) {
			t.Fatalf("OnEnd calls during open: %d, last %+v; want one timeout (cancel) dated at the open", ends.total(), r)
		}
		if l, _ := m.List(ctx, pending.Filter{}); fmt.Sprint(ids(l)) != "[que_plain]" {
			t.Errorf("list = %v, want [que_plain]", ids(l))
		}
		if q, err := m.Get(ctx, "que_overdue"); err != nil || q.Ended.Ending != pending.EndTimeout {
			t.Errorf("overdue question = %+v, %v; want timed out", q, err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := ends.total(); n != 1 {
			t.Errorf("OnEnd called %d times, want 1", n)
		}
	})
}

// When the overdue questions' commit fails at open, they stay pending and
// time out once a retry commits.
func TestOpenRetriesOverdueCommit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, first := journaled(t, pending.Options{})
		mustCreate(t, first, ask("que_overdue", func(q *pending.Question) { q.Deadline = time.Now().Add(time.Minute) }))
		if err := first.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		time.Sleep(time.Hour)

		j.set(func(j *fakeJournal) { j.failPut = failEndingsOf("que_overdue", 1) })
		var ends endLog
		m := openStore(t, j, pending.Options{OnEnd: ends.record})
		if q, err := m.Get(ctx, "que_overdue"); err != nil || q.Ended != nil || ends.total() != 0 {
			t.Fatalf("after a failed commit at open = %+v, %v; want still pending", q, err)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if q, _ := m.Get(ctx, "que_overdue"); q.Ended == nil || q.Ended.Ending != pending.EndTimeout || ends.count("que_overdue") != 1 {
			t.Errorf("after the retry = %+v, OnEnd %d times; want timed out once", q.Ended, ends.count("que_overdue"))
		}
	})
}

func TestOpenForgetsExpiredEndings(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, first := journaled(t, pending.Options{Retention: time.Hour})
		for _, id := range []string{"que_old", "que_recent"} {
			mustCreate(t, first, ask(id))
			if _, err := first.Settle(ctx, id, replied("Red")); err != nil {
				t.Fatalf("settle: %v", err)
			}
			time.Sleep(30 * time.Minute)
		}
		if err := first.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		// que_old ended 1h ago, que_recent 30min ago.
		m := openStore(t, j, pending.Options{Retention: time.Hour})
		if _, err := m.Get(ctx, "que_old"); !errors.Is(err, pending.ErrNotFound) {
			t.Errorf("get of an expired ending: err = %v, want ErrNotFound", err)
		}
		if fmt.Sprint(j.ids()) != "[que_recent]" {
			t.Errorf("journal holds %v after open, want [que_recent]", j.ids())
		}
		// Retention counts from the ending, not from the restart.
		time.Sleep(30*time.Minute - time.Nanosecond)
		if _, err := m.Get(ctx, "que_recent"); err != nil {
			t.Errorf("get just before retention ends: %v", err)
		}
		time.Sleep(time.Nanosecond)
		if _, err := m.Get(ctx, "que_recent"); !errors.Is(err, pending.ErrNotFound) {
			t.Errorf("get once retention ended: err = %v, want ErrNotFound", err)
		}
	})
}

func TestOpenFailsWhenExpiredCannotBeDeleted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, first := journaled(t, pending.Options{Retention: time.Hour})
		mustCreate(t, first, ask("que_1"))
		if _, err := first.Settle(ctx, "que_1", replied("Red")); err != nil {
			t.Fatalf("settle: %v", err)
		}
		first.Close(ctx)
		time.Sleep(2 * time.Hour)
		j.set(func(j *fakeJournal) { j.failDelete = failAlways })
		if _, err := pending.Open(ctx, pending.Options{Journal: j, Retention: time.Hour}); !errors.Is(err, pending.ErrUnavailable) {
			t.Errorf("open: err = %v, want ErrUnavailable", err)
		}
		if fmt.Sprint(j.ids()) != "[que_1]" {
			t.Errorf("journal holds %v, want [que_1] untouched", j.ids())
		}
	})
}

func TestJanitorDeletesExpiredRecords(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, m := journaled(t, pending.Options{Retention: time.Hour})
		mustCreate(t, m, ask("que_pending"))
		for _, id := range []string{"que_1", "que_2"} {
			mustCreate(t, m, ask(id))
			if _, err := m.Settle(ctx, id, cancelled(pending.EndRejected)); err != nil {
				t.Fatalf("settle: %v", err)
			}
		}
		j.set(func(j *fakeJournal) { j.failDelete = failAlways })
		time.Sleep(2 * time.Hour) // expired at 1h, sweep at 2h fails
		synctest.Wait()
		if n := m.Held(); n != 3 || len(j.ids()) != 3 {
			t.Fatalf("after a failed sweep the store holds %d and the journal %v; want all three kept", n, j.ids())
		}
		if _, err := m.Get(ctx, "que_1"); !errors.Is(err, pending.ErrNotFound) {
			t.Errorf("get of an expired question: err = %v, want ErrNotFound", err)
		}

		j.set(func(j *fakeJournal) { j.failDelete = nil })
		deletes := j.count("delete")
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := m.Held(); n != 1 || fmt.Sprint(j.ids()) != "[que_pending]" {
			t.Errorf("after the sweep the store holds %d and the journal %v; want only que_pending", n, j.ids())
		}
		if n := j.count("delete") - deletes; n != 1 {
			t.Errorf("the sweep made %d deletes, want 1 for both records", n)
		}
	})
}
