package pending_test

// The MaxRetained bound: at most that many ended questions are kept, the one
// that ended first is evicted first, and an evicted question reads exactly
// like one past retention, in memory, in the journal and after a restart.

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// endAll creates and then ends each id, in order, with a reply naming it.
func endAll(t *testing.T, m *pending.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		mustCreate(t, m, ask(id))
		if _, err := m.Settle(t.Context(), id, replied(id)); err != nil {
			t.Fatalf("settle %s: %v", id, err)
		}
	}
}

// awaitSweep lets the janitor's batch of evicted records come due (see
// pending.EvictionDelay) and waits until the bubble is idle.
func awaitSweep() {
	time.Sleep(pending.EvictionDelay)
	synctest.Wait()
}

// readable returns which of ids Get still finds, failing on any error other
// than ErrNotFound and on an ending that is not the reply naming its id.
func readable(t *testing.T, m *pending.Store, ids ...string) []string {
	t.Helper()
	var found []string
	for _, id := range ids {
		q, err := m.Get(t.Context(), id)
		switch {
		case err == nil:
			if q.Ended != nil && q.Ended.Answers[0][0] != id {
				t.Errorf("get %s = %+v, want its reply", id, q.Ended)
			}
			found = append(found, id)
		case !errors.Is(err, pending.ErrNotFound):
			t.Errorf("get %s: %v", id, err)
		}
	}
	return found
}

func TestMaxRetainedEvictsInEndingOrder(t *testing.T) {
	t.Parallel()
	for kind, build := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			m, _ := build(t, pending.Options{MaxRetained: 3})
			mustCreate(t, m, ask("que_pending"))
			// Created in one order, ended in another: eviction follows the endings.
			for _, id := range []string{"que_1", "que_2", "que_3", "que_4", "que_5"} {
				mustCreate(t, m, ask(id))
			}
			for _, id := range []string{"que_3", "que_1", "que_5", "que_2"} {
				if _, err := m.Settle(ctx, id, replied(id)); err != nil {
					t.Fatalf("settle %s: %v", id, err)
				}
			}
			all := []string{"que_1", "que_2", "que_3", "que_4", "que_5"}
			if got := readable(t, m, all...); fmt.Sprint(got) != "[que_1 que_2 que_4 que_5]" {
				t.Errorf("after 4 endings with room for 3, readable %v; want que_3 (ended first) gone, que_4 pending", got)
			}
			if _, err := m.Settle(ctx, "que_4", replied("que_4")); err != nil {
				t.Fatalf("settle que_4: %v", err)
			}
			if got := readable(t, m, all...); fmt.Sprint(got) != "[que_2 que_4 que_5]" {
				t.Errorf("after 5 endings, readable %v; want the last three ended", got)
			}
			expectPending(t, ctx, m, "que_pending", "pending question, which the bound must never touch")
			if n, _ := m.Count(ctx, pending.Filter{}); n != 1 {
				t.Errorf("count = %d, want the one pending question", n)
			}
		})
	}
}

func TestMaxRetainedDefault(t *testing.T) {
	t.Parallel()
	m := newStore(t, pending.Options{})
	ids := make([]string, pending.DefaultMaxRetained+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("que_%05d", i)
	}
	endAll(t, m, ids...)
	if got := readable(t, m, ids[0], ids[1], ids[len(ids)-1]); fmt.Sprint(got) != fmt.Sprint([]string{ids[1], ids[len(ids)-1]}) {
		t.Errorf("readable %v; want all but the first of %d endings", got, len(ids))
	}
	if n := m.Held(); n != pending.DefaultMaxRetained {
		t.Errorf("store holds %d questions, want %d", n, pending.DefaultMaxRetained)
	}
}

// An evicted question fails Get, Wait, Settle and a second Create of its id
// exactly as one past retention does: same sentinel, same message.
func TestEvictedReadsLikeExpired(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		expiring := newStore(t, pending.Options{Retention: time.Hour})
		endAll(t, expiring, "que_1")
		time.Sleep(time.Hour)

		evicting := newStore(t, pending.Options{Retention: time.Hour, MaxRetained: 1})
		endAll(t, evicting, "que_1", "que_2")

		for op, call := range map[string]func(m *pending.Store) error{
			"get":    func(m *pending.Store) error { _, err := m.Get(ctx, "que_1"); return err },
			"wait":   func(m *pending.Store) error { _, err := m.Wait(ctx, "que_1"); return err },
			"settle": func(m *pending.Store) error { _, err := m.Settle(ctx, "que_1", replied("again")); return err },
		} {
			expired, evicted := call(expiring), call(evicting)
			if !errors.Is(evicted, pending.ErrNotFound) || evicted.Error() != expired.Error() {
				t.Errorf("%s of an evicted question: %v; want %v, as past retention", op, evicted, expired)
			}
		}
		// Forgotten means the id is free again.
		mustCreate(t, evicting, ask("que_1"))
		expectPending(t, ctx, evicting, "que_1", "re-created question")
	})
}

// A Wait that found the question before it ended gets the result even if the
// question is evicted before the waiter wakes; one that starts after the
// eviction gets ErrNotFound.
func TestWaitOnEvictedQuestion(t *testing.T) {
	t.Parallel()
	for kind, build := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			m, _ := build(t, pending.Options{MaxRetained: 1})
			mustCreate(t, m, ask("que_1"))
			g := newGate()
			defer g.open()
			m.SetOnWaitEntered(func(string) { g.park() })
			waited := make(chan *pending.Question, 1)
			go func() {
				q, err := m.Wait(ctx, "que_1")
				if err != nil {
					t.Errorf("wait: %v", err)
				}
				waited <- q
			}()
			g.await(1) // found, not yet blocked
			m.SetOnWaitEntered(nil)
			if _, err := m.Settle(ctx, "que_1", replied("que_1")); err != nil {
				t.Fatalf("settle: %v", err)
			}
			endAll(t, m, "que_2") // evicts que_1
			if got := readable(t, m, "que_1", "que_2"); fmt.Sprint(got) != "[que_2]" {
				t.Fatalf("readable %v, want que_1 evicted", got)
			}
			g.open()
			if q := <-waited; q == nil || q.Ended == nil || q.Ended.Answers[0][0] != "que_1" {
				t.Errorf("waiter got %+v, want que_1's reply", q)
			}
			if _, err := m.Wait(ctx, "que_1"); !errors.Is(err, pending.ErrNotFound) {
				t.Errorf("wait after the eviction: %v, want ErrNotFound", err)
			}
		})
	}
}

// The janitor deletes an evicted record at once, not when its retention
// would have run out.
func TestEvictionDeletesRecords(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, j, m := journaled(t, pending.Options{Retention: time.Hour, MaxRetained: 2})
		mustCreate(t, m, ask("que_pending"))
		endAll(t, m, "que_1", "que_2", "que_3", "que_4")
		awaitSweep()
		if got := fmt.Sprint(j.ids()); got != "[que_3 que_4 que_pending]" {
			t.Errorf("journal holds %v, want the two newest results and the pending question", got)
		}
		if n := m.Held(); n != 3 {
			t.Errorf("store holds %d questions, want 3", n)
		}
	})
}

// Evictions are deleted in batches: a burst of them costs the journal one
// deletion, EvictionDelay after the first, and until then the evicted
// results read as gone. A batch that reaches a megabyte of charged weight
// is deleted at once, so evicted entries never hold much memory.
func TestEvictionsAreDeletedInBatches(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		j := newFakeJournal()
		var deletes [][]string
		j.set(func(j *fakeJournal) {
			j.onDelete = func(ids []string) { deletes = append(deletes, slices.Sorted(slices.Values(ids))) }
		})
		m := openStore(t, j, pending.Options{Retention: time.Hour, MaxRetained: 1})
		endAll(t, m, "que_0", "que_1", "que_2", "que_3", "que_4")
		synctest.Wait()
		if len(deletes) != 0 {
			t.Errorf("deletions %v at once; want none before the batch is due", deletes)
		}
		if got := readable(t, m, "que_0", "que_1", "que_2", "que_3", "que_4"); fmt.Sprint(got) != "[que_4]" {
			t.Errorf("readable %v before the batch is deleted; want only que_4", got)
		}
		awaitSweep()
		if got := fmt.Sprint(deletes); got != "[[que_0 que_1 que_2 que_3]]" {
			t.Errorf("deletions %v; want one of the four evicted", got)
		}

		deletes = nil
		big := strings.Repeat("x", 600<<10)
		for _, id := range []string{"que_big1", "que_big2"} {
			mustCreate(t, m, ask(id, func(q *pending.Question) { q.Message = big }))
			if _, err := m.Settle(t.Context(), id, replied(id)); err != nil {
				t.Fatalf("settle %s: %v", id, err)
			}
			synctest.Wait()
		}
		// que_big1's ending evicts que_4 and que_big2's que_big1: 600 KiB
		// in the batch. Not yet a megabyte, so it waits.
		if len(deletes) != 0 {
			t.Errorf("deletions %v; want none while the batch is under a megabyte", deletes)
		}
		mustCreate(t, m, ask("que_big3", func(q *pending.Question) { q.Message = big }))
		if _, err := m.Settle(t.Context(), "que_big3", replied("que_big3")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // no time passes: the batch is full by weight
		if got := fmt.Sprint(deletes); got != "[[que_4 que_big1 que_big2]]" {
			t.Errorf("deletions %v; want the batch deleted as it passed a megabyte", got)
		}
	})
}

// A failed deletion keeps the evicted entry hidden and retries at the next
// eviction; a store stopped before the deletion (a crash) leaves the records,
// and the next Open evicts them again. Pending questions are never touched.
func TestEvictionSurvivesFailedDeletionAndRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, first := journaled(t, pending.Options{Retention: time.Hour, MaxRetained: 2})
		mustCreate(t, first, ask("que_pending"))
		j.set(func(j *fakeJournal) { j.failDelete = failAlways })
		endAll(t, first, "que_1", "que_2", "que_3")
		awaitSweep()
		if got := readable(t, first, "que_1", "que_2", "que_3"); fmt.Sprint(got) != "[que_2 que_3]" {
			t.Errorf("readable %v after a failed deletion, want que_1 still evicted", got)
		}
		if got := fmt.Sprint(j.ids()); got != "[que_1 que_2 que_3 que_pending]" {
			t.Fatalf("journal holds %v, want every record kept after the failed deletion", got)
		}

		j.set(func(j *fakeJournal) { j.failDelete = nil })
		time.Sleep(time.Minute)   // later endings are newer on restore too
		endAll(t, first, "que_4") // evicts que_2 and retries que_1
		awaitSweep()
		if got := fmt.Sprint(j.ids()); got != "[que_3 que_4 que_pending]" {
			t.Errorf("journal holds %v after the next eviction, want que_1 and que_2 deleted", got)
		}

		// A crash between eviction and deletion: the deletion never happens.
		j.set(func(j *fakeJournal) { j.failDelete = failAlways })
		time.Sleep(time.Minute)
		endAll(t, first, "que_5")
		awaitSweep()
		if err := first.Close(ctx); err != nil {
			t.Fatalf("close: %v", err)
		}
		j.set(func(j *fakeJournal) { j.failDelete = nil })
		m := openStore(t, j, pending.Options{Retention: time.Hour, MaxRetained: 2})
		if got := fmt.Sprint(j.ids()); got != "[que_4 que_5 que_pending]" {
			t.Errorf("journal holds %v after the restart, want the bound applied again", got)
		}
		if got := readable(t, m, "que_3", "que_4", "que_5"); fmt.Sprint(got) != "[que_4 que_5]" {
			t.Errorf("readable after the restart %v, want que_4 and que_5", got)
		}
		expectPending(t, ctx, m, "que_pending", "pending question after the restart")
	})
}

// Open keeps the newest MaxRetained results by ending time, whatever their
// order in the journal, deletes the rest, and counts questions that time out
// at Open against the bound like any other ending.
func TestOpenAppliesTheBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		j := newFakeJournal()
		now := time.Now()
		var records []*pending.Question
		for i, ago := range []time.Duration{3, 1, 5, 2, 4} { // minutes ago: que_1 is the second newest
			q := ask(fmt.Sprintf("que_%d", i))
			q.Ended = &pending.Outcome{Ending: pending.EndReplied, Result: pending.Result{Action: pending.ActionAccept},
				Answers: [][]string{{q.ID}}, At: now.Add(-ago * time.Minute)}
			records = append(records, q)
		}
		records = append(records, ask("que_pending"), ask("que_overdue", func(q *pending.Question) { q.Deadline = now.Add(-time.Second) }))
		if err := j.Put(ctx, records...); err != nil {
			t.Fatal(err)
		}

		var deletes [][]string
		j.set(func(j *fakeJournal) {
			j.onDelete = func(ids []string) { deletes = append(deletes, slices.Sorted(slices.Values(ids))) }
		})
		m := openStore(t, j, pending.Options{MaxRetained: 3})
		awaitSweep() // the overdue question's ending evicts the oldest kept one
		if got := fmt.Sprint(deletes); got != "[[que_2 que_4] [que_0]]" {
			t.Errorf("deletions %v; want Open to delete the 2 oldest of 5 endings, then the timeout to evict que_0", got)
		}
		if got := fmt.Sprint(j.ids()); got != "[que_1 que_3 que_overdue que_pending]" {
			t.Errorf("journal holds %v, want the 3 newest endings and the pending question", got)
		}
		if q, err := m.Get(ctx, "que_overdue"); err != nil || q.Ended == nil || q.Ended.Ending != pending.EndTimeout {
			t.Errorf("overdue question = %+v, %v; want it timed out and kept", q, err)
		}
		expectPending(t, ctx, m, "que_pending", "pending question")
	})
}

// On a real file: evicted records leave the file while the store runs, and a
// restart finds only what was kept.
func TestEvictionOnBoltFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	opts := pending.Options{MaxRetained: 2}
	first := startBoltStore(t, path, opts)
	mustCreate(t, first.Store, ask("que_pending"))
	endAll(t, first.Store, "que_1", "que_2", "que_3", "que_4")
	want := "[que_3 que_4 que_pending]"
	recordIDs := func() string {
		qs, err := first.journal.Load(ctx)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		ids := ids(qs)
		slices.Sort(ids)
		return fmt.Sprint(ids)
	}
	// The janitor deletes in the background; give it a generous while.
	for deadline := time.Now().Add(10 * time.Second); recordIDs() != want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := recordIDs(); got != want {
		t.Fatalf("file holds %v, want %v", got, want)
	}
	first.stop()

	second := startBoltStore(t, path, opts)
	if got := readable(t, second.Store, "que_1", "que_2", "que_3", "que_4"); fmt.Sprint(got) != "[que_3 que_4]" {
		t.Errorf("readable after the restart %v, want que_3 and que_4", got)
	}
	expectPending(t, ctx, second.Store, "que_pending", "pending question after the restart")
}

// Guard: a Create of an evicted question's id waits while its record is
// being deleted. Without the wait the deletion lands after, and erases, the
// new record.
func TestCreateWaitsForDeletionOfEvictedID(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, m := journaled(t, pending.Options{MaxRetained: 1})
		endAll(t, m, "que_1")
		g := newGate()
		defer g.open()
		j.set(func(j *fakeJournal) { j.onDelete = func([]string) { g.park() } })
		endAll(t, m, "que_2") // evicts que_1; its deletion parks
		g.await(1)

		createWaitsFor(t, createAgain(ctx, m, "que_1"), g, "deletion")
		synctest.Wait()
		expectCreatedAgain(t, j, "que_1")
	})
}

// Guard: an eviction leaves alone the record of an id a Create is
// committing; the stale entry is dropped at a later sweep. Without the guard
// the deletion of the old record lands after, and erases, the new one.
func TestEvictionSparesIDBeingCreated(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, j, m := journaled(t, pending.Options{MaxRetained: 1})
		busy, deletingOld, creating := newGate(), newGate(), newGate()
		defer busy.open()
		defer deletingOld.open()
		defer creating.open()
		j.set(func(j *fakeJournal) {
			j.onDelete = func(ids []string) {
				if slices.Contains(ids, "que_old") {
					deletingOld.park()
				} else {
					busy.park()
				}
			}
		})
		endAll(t, m, "que_a", "que_old") // evicts que_a: the janitor parks in its deletion
		busy.await(1)
		endAll(t, m, "que_1") // evicts que_old; the janitor will sweep once free
		parkPuts(j, creating, isCreationOf("que_old"))
		created := createAgain(ctx, m, "que_old")
		creating.await(1)
		busy.open() // the janitor sweeps que_old while its id is being created
		awaitSweep()
		creating.open()
		if err := <-created; err != nil {
			t.Fatalf("create: %v", err)
		}
		deletingOld.open() // lets a deletion that should not exist land last
		synctest.Wait()
		endAll(t, m, "que_2") // another sweep drops the stale entry
		awaitSweep()
		expectCreatedAgain(t, j, "que_old")
		if q, err := m.Get(ctx, "que_old"); err != nil || q.Ended != nil || m.Held() != 2 {
			t.Errorf("get = %+v, %v (held %d); want the new question pending, beside que_2", q, err, m.Held())
		}
	})
}

// Eviction racing readers, waiters, endings and creations of the same ids:
// under -race, every read is either the right result or ErrNotFound, the
// store never holds more than the bound once the janitor has caught up, and
// nothing pending is lost.
func TestEvictionRaces(t *testing.T) {
	t.Parallel()
	for kind, build := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			const retained, workers, rounds = 4, 4, 50
			m, j := build(t, pending.Options{MaxRetained: retained})
			mustCreate(t, m, ask("que_pending"))
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for r := range rounds {
						id := fmt.Sprintf("que_%d_%d", w, r%8) // ids come back once evicted
						if err := m.Create(ctx, ask(id)); err != nil {
							if !errors.Is(err, pending.ErrExists) {
								t.Errorf("create %s: %v", id, err)
							}
							continue
						}
						waited := make(chan error, 1)
						go func() {
							q, err := m.Wait(ctx, id)
							if err == nil && (q.Ended == nil || q.Ended.Answers[0][0] != id) {
								err = fmt.Errorf("wait %s = %+v", id, q.Ended)
							}
							if errors.Is(err, pending.ErrNotFound) {
								err = nil // evicted before the waiter looked
							}
							waited <- err
						}()
						if _, err := m.Settle(ctx, id, replied(id)); err != nil {
							t.Errorf("settle %s: %v", id, err)
						}
						for _, other := range []string{id, fmt.Sprintf("que_%d_%d", (w+1)%workers, r%8)} {
							q, err := m.Get(ctx, other)
							if err == nil && q.Ended != nil && q.Ended.Answers[0][0] != other {
								t.Errorf("get %s = %+v", other, q.Ended)
							} else if err != nil && !errors.Is(err, pending.ErrNotFound) {
								t.Errorf("get %s: %v", other, err)
							}
						}
						if err := <-waited; err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			endAll(t, m, "que_last") // one more eviction: the janitor takes every leftover
			held := func() int { return m.Held() }
			for deadline := time.Now().Add(10 * time.Second); held() > retained+1 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if n := held(); n != retained+1 {
				t.Errorf("store holds %d questions, want %d retained and the pending one", n, retained)
			}
			expectPending(t, ctx, m, "que_pending", "pending question")
			if j != nil {
				qs, err := j.Load(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(qs) > retained+1 {
					t.Errorf("journal holds %d records, want at most %d", len(qs), retained+1)
				}
			}
		})
	}
}

// A retained result keeps no parsed form: it is most of what a question
// costs, and only a reply needs it.
func TestEndedQuestionDropsForm(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	form, err := elicit.NewForm("Pick one", []byte(`{"type":"object","properties":{"pick":{"type":"string","enum":["Red","Blue"]}}}`), elicit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := newStore(t, pending.Options{})
	mustCreate(t, m, ask("que_1", func(q *pending.Question) { q.Form = form }))
	if q, err := m.Get(ctx, "que_1"); err != nil || q.Form != form {
		t.Fatalf("pending question = %+v, %v; want its form", q, err)
	}
	settled, err := m.Settle(ctx, "que_1", replied("Red"))
	if err != nil || settled.Form != nil {
		t.Fatalf("settle = %+v, %v; want the ended copy without a form", settled, err)
	}
	if q, err := m.Get(ctx, "que_1"); err != nil || q.Form != nil || q.Ended == nil {
		t.Errorf("ended question = %+v, %v; want it without a form", q, err)
	}
}
