package pending_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// endedRecord is q as a rival replica's journal holds it once it ended with o.
func endedRecord(q *pending.Question, o pending.Outcome) *pending.Question {
	c := *q
	if o.At.IsZero() {
		o.At = time.Now()
	}
	c.Ended = &o
	return &c
}

// A rival's creation and ending, observed, behave here as if they were this
// store's own: listed, then ended with waiters woken. They are reported to
// OnObserve only, once each, however often they are observed.
func TestObserveAppliesRivalChangesOnce(t *testing.T) {
	t.Parallel()
	var ends, observed endLog
	m := openStore(t, newFakeJournal(), pending.Options{OnEnd: ends.record, OnObserve: observed.record})
	ctx := context.Background()
	q := ask("q1", func(q *pending.Question) { q.CreatedAt = time.Now() })
	for i, want := range []bool{true, false} {
		applied, err := m.Observe(ctx, q)
		if err != nil || applied != want {
			t.Fatalf("observe creation #%d = %v, %v; want %v", i+1, applied, err, want)
		}
	}
	list, err := m.List(ctx, pending.Filter{})
	if err != nil || len(list) != 1 || list[0].ID != "q1" {
		t.Fatalf("list after an observed creation = %v, %v", ids(list), err)
	}
	waited := make(chan *pending.Question, 1)
	go func() {
		got, _ := m.Wait(ctx, "q1")
		waited <- got
	}()
	rival := endedRecord(q, replied("red"))
	for i, want := range []bool{true, false} {
		applied, err := m.Observe(ctx, rival)
		if err != nil || applied != want {
			t.Fatalf("observe ending #%d = %v, %v; want %v", i+1, applied, err, want)
		}
	}
	if got := <-waited; got == nil || got.Ended == nil || got.Ended.Result.Content["pick"] != "red" {
		t.Fatalf("waiter woke with %+v; want the rival's reply", got)
	}
	if _, err := m.Settle(ctx, "q1", cancelled(pending.EndRejected)); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("settle after an observed ending: %v; want ErrNotFound", err)
	}
	if ends.total() != 0 || observed.count("q1") != 2 || observed.ends[0].Ended != nil || observed.last("q1").Ended == nil {
		t.Fatalf("OnEnd got %d, OnObserve %d (%+v); want 0 and the creation then the ending", ends.total(), observed.total(), observed.ends)
	}
}

// An ending this store is committing and a rival ending observed meanwhile:
// the observer waits for the commit and then finds the question ended, so
// the question ends once, reported once.
func TestObserveWaitsForALocalEndingCommit(t *testing.T) {
	t.Parallel()
	var ends, observed endLog
	_, j, m := journaled(t, pending.Options{OnEnd: ends.record, OnObserve: observed.record})
	ctx := context.Background()
	mustCreate(t, m, ask("q1"))
	g := newGate()
	j.set(func(j *fakeJournal) {
		j.onPut = func(qs []*pending.Question) {
			if qs[0].Ended != nil {
				g.park()
			}
		}
	})
	settled := make(chan error, 1)
	go func() {
		_, err := m.Settle(ctx, "q1", replied("mine"))
		settled <- err
	}()
	g.await(1)
	got, _ := m.Get(ctx, "q1")
	observedDone := make(chan bool, 1)
	go func() {
		applied, _ := m.Observe(ctx, endedRecord(got, replied("rival")))
		observedDone <- applied
	}()
	select {
	case <-observedDone:
		t.Fatal("Observe applied an ending while the store's own was committing")
	case <-time.After(50 * time.Millisecond):
	}
	g.open()
	if err := <-settled; err != nil {
		t.Fatalf("settle: %v", err)
	}
	if <-observedDone {
		t.Fatal("Observe applied a second ending")
	}
	if ends.count("q1") != 1 || observed.total() != 0 || ends.last("q1").Ended.Result.Content["pick"] != "mine" {
		t.Fatalf("OnEnd %d, OnObserve %d; want the store's own ending once", ends.count("q1"), observed.total())
	}
}

// A journal that refuses an ending because a rival's ending came first
// (ErrNotFound) makes Settle answer ErrNotFound, not ErrUnavailable, and
// leaves the question pending until the rival's ending is observed; a
// refused creation (ErrExists) is ErrExists.
func TestJournalRefusalsAreRivalsWins(t *testing.T) {
	t.Parallel()
	var ends endLog
	_, j, m := journaled(t, pending.Options{OnEnd: ends.record})
	ctx := context.Background()
	mustCreate(t, m, ask("q1"))
	j.set(func(j *fakeJournal) {
		j.failPut = func(qs []*pending.Question) error {
			if qs[0].Ended != nil {
				return fmt.Errorf("ending %s: already ended: %w", qs[0].ID, pending.ErrNotFound)
			}
			return fmt.Errorf("creating %s: taken: %w", qs[0].ID, pending.ErrExists)
		}
	})
	if _, err := m.Settle(ctx, "q1", replied("late")); !errors.Is(err, pending.ErrNotFound) || errors.Is(err, pending.ErrUnavailable) {
		t.Fatalf("settle refused by the journal: %v; want ErrNotFound only", err)
	}
	if got, err := m.Get(ctx, "q1"); err != nil || got.Ended != nil {
		t.Fatalf("after a refused ending: %+v, %v; want it still pending", got, err)
	}
	if err := m.Create(ctx, ask("q2")); !errors.Is(err, pending.ErrExists) || errors.Is(err, pending.ErrUnavailable) {
		t.Fatalf("create refused by the journal: %v; want ErrExists only", err)
	}
	if ends.total() != 0 {
		t.Fatalf("OnEnd called %d times for refused endings", ends.total())
	}
}

// A rival ending of a question whose creation this store is still
// committing is applied once the creation is in place.
func TestObserveEndingDuringCreation(t *testing.T) {
	t.Parallel()
	var observed endLog
	_, j, m := journaled(t, pending.Options{OnObserve: observed.record})
	ctx := context.Background()
	g := newGate()
	j.set(func(j *fakeJournal) { j.onPut = func([]*pending.Question) { g.park() } })
	q := ask("q1", func(q *pending.Question) { q.CreatedAt = time.Now() })
	created := make(chan error, 1)
	go func() { created <- m.Create(ctx, q) }()
	g.await(1)
	if applied, err := m.Observe(ctx, endedRecord(q, cancelled(pending.EndRejected))); applied || err != nil {
		t.Fatalf("observe during the creation = %v, %v; want it kept for later", applied, err)
	}
	g.open()
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := m.Get(ctx, "q1")
	if err != nil || got.Ended == nil || got.Ended.Ending != pending.EndRejected {
		t.Fatalf("after the creation: %+v, %v; want it ended by the observed rejection", got, err)
	}
	if observed.count("q1") != 1 {
		t.Fatalf("OnObserve got %d reports; want 1", observed.count("q1"))
	}
}

// A store's own creation can reach it through the shared journal (its
// tailer) before its committer has indexed it. Observe then waits for the
// commit to be over, so that once it returns the question is found here:
// a replica announces the creation after Observe, and an operator who
// answers at once must not get 404.
func TestObserveOfOwnCreationWaitsForItsCommit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, m := journaled(t, pending.Options{})
		g := newGate()
		defer g.open()
		parkPuts(j, g, isCreationOf("q1"))
		q := ask("q1", func(q *pending.Question) { q.CreatedAt = time.Now() })
		created := make(chan error, 1)
		go func() { created <- m.Create(ctx, q) }()
		g.await(1)
		type result struct {
			applied bool
			err     error
			found   error
		}
		observed := make(chan result, 1)
		go func() {
			applied, err := m.Observe(ctx, q)
			_, found := m.Get(ctx, "q1")
			observed <- result{applied, err, found}
		}()
		synctest.Wait()
		select {
		case r := <-observed:
			t.Fatalf("Observe returned (%v, %v) while the creation was committing; Get then said %v", r.applied, r.err, r.found)
		default:
		}
		g.open()
		if err := <-created; err != nil {
			t.Fatalf("create: %v", err)
		}
		if r := <-observed; r.applied || r.err != nil || r.found != nil {
			t.Fatalf("Observe = %v, %v, then Get: %v; want false, nil (its own) and the question found", r.applied, r.err, r.found)
		}
	})
}
