package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
)

// A question created on replica A is pending on B (reported to B's
// OnObserve, not its OnEnd); B's reply wakes the agent waiting on A, and A
// hears of the ending through OnObserve only, while B, which ended it,
// reports it through OnEnd.
func TestReplicasShareQuestions(t *testing.T) {
	url := database(t)
	a, b := newReplica(t, url, pending.Options{}), newReplica(t, url, pending.Options{})
	ctx := context.Background()
	if err := a.store.Create(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	if got := b.observed.next(t); got.ID != "q1" || got.Ended != nil {
		t.Fatalf("B observed %+v; want q1 asked", got)
	}
	if got, err := b.store.Get(ctx, "q1"); err != nil || got.Ended != nil {
		t.Fatalf("B's Get: %+v, %v", got, err)
	}
	waited := make(chan *pending.Question, 1)
	go func() {
		q, err := a.store.Wait(ctx, "q1")
		if err != nil {
			t.Errorf("wait on A: %v", err)
		}
		waited <- q
	}()
	if _, err := b.store.Settle(ctx, "q1", reply("red")); err != nil {
		t.Fatalf("reply on B: %v", err)
	}
	select {
	case q := <-waited:
		if q == nil || q.Ended == nil || q.Ended.Result.Content["pick"] != "red" {
			t.Fatalf("A's waiter got %+v", q)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent waiting on A was not woken by B's reply")
	}
	if got := a.observed.next(t); got.ID != "q1" || got.Ended == nil {
		t.Fatalf("A observed %+v; want q1's ending", got)
	}
	if got := b.ends.next(t); got.ID != "q1" {
		t.Fatalf("B's OnEnd got %s", got.ID)
	}
	a.ends.none(t, "A's OnEnd")
	b.observed.none(t, "B's OnObserve of its own ending")
	if _, err := a.store.Settle(ctx, "q1", reply("late")); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("a second ending on A: %v; want ErrNotFound", err)
	}
}

// A reply on one replica and a rejection on another, at once, many times:
// each question ends once; the loser gets ErrNotFound, and both replicas
// end up agreeing on the winner.
func TestConcurrentEndingsOnTwoReplicas(t *testing.T) {
	url := database(t)
	a, b := newReplica(t, url, pending.Options{}), newReplica(t, url, pending.Options{})
	ctx := context.Background()
	const questions = 20
	for i := range questions {
		id := "q" + string(rune('a'+i))
		if err := a.store.Create(ctx, question(id)); err != nil {
			t.Fatal(err)
		}
		b.observed.until(t, id, false)
		var wg sync.WaitGroup
		results := make([]error, 2)
		wg.Go(func() { _, results[0] = a.store.Settle(ctx, id, reply("yes")) })
		wg.Go(func() {
			_, results[1] = b.store.Settle(ctx, id, pending.Outcome{Ending: pending.EndRejected, Result: pending.Result{Action: pending.ActionCancel}})
		})
		wg.Wait()
		won := 0
		for _, err := range results {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, pending.ErrNotFound):
				t.Fatalf("%s: losing ending: %v; want ErrNotFound", id, err)
			}
		}
		if won != 1 {
			t.Fatalf("%s: %d endings won; want 1 (%v)", id, won, results)
		}
		want := pending.EndReplied
		if results[0] != nil {
			want = pending.EndRejected
		}
		for name, r := range map[string]*replica{"A": a, "B": b} {
			q, err := r.store.Wait(ctx, id)
			if err != nil || q.Ended.Ending != want {
				t.Fatalf("%s: %s says %+v, %v; want %s", id, name, q, err, want)
			}
		}
	}
}

// A deadline armed on both replicas times the question out once.
func TestTimeoutFiresOnceAcrossReplicas(t *testing.T) {
	url := database(t)
	a, b := newReplica(t, url, pending.Options{}), newReplica(t, url, pending.Options{})
	ctx := context.Background()
	q := question("q1")
	q.Deadline = time.Now().Add(500 * time.Millisecond)
	if err := a.store.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	b.observed.next(t)
	for name, r := range map[string]*replica{"A": a, "B": b} {
		got, err := r.store.Wait(ctx, "q1")
		if err != nil || got.Ended.Ending != pending.EndTimeout {
			t.Fatalf("%s: %+v, %v; want a timeout", name, got, err)
		}
	}
	var changes int
	if err := a.db.Pool().QueryRow(ctx, "SELECT count(*) FROM changes WHERE kind = 'ended'").Scan(&changes); err != nil {
		t.Fatal(err)
	}
	if changes != 1 {
		t.Fatalf("%d endings logged; want 1", changes)
	}
}

// A replica started later sees every pending question, and none that
// ended; a replica stopped leaves its questions pending for the others.
func TestLateReplicaSeesPendingQuestions(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{})
	ctx := context.Background()
	for _, id := range []string{"q1", "q2", "q3"} {
		if err := a.store.Create(ctx, question(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.store.Settle(ctx, "q2", reply("x")); err != nil {
		t.Fatal(err)
	}
	a.tail.Stop()
	if err := a.store.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c := newReplica(t, url, pending.Options{})
	list, err := c.store.List(ctx, pending.Filter{})
	if err != nil || len(list) != 2 || list[0].ID != "q1" || list[1].ID != "q3" {
		t.Fatalf("late replica lists %v, %v; want q1 and q3", list, err)
	}
	if _, err := c.store.Settle(ctx, "q3", reply("y")); err != nil {
		t.Fatalf("ending a stopped replica's question: %v", err)
	}
}

// A replica whose tail lags still finds a question another replica has
// just created: the miss waits for the tail to apply what was committed
// before it, instead of answering 404.
func TestMissCatchesUpWithTheLog(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{})
	db := open(t, url)
	m, b, release := laggingMirror(t, db)
	ctx := context.Background()
	if err := a.store.Create(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, "q1"); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("the lagging mirror's own Get: %v; want ErrNotFound (else this test shows nothing)", err)
	}
	time.AfterFunc(200*time.Millisecond, func() { close(release) })
	got, err := b.Get(ctx, "q1")
	if err != nil || got.ID != "q1" {
		t.Fatalf("Get through the mirror: %+v, %v; want q1 once caught up", got, err)
	}
	if _, err := b.Settle(ctx, "nope", reply("x")); !errors.Is(err, pending.ErrNotFound) || errors.Is(err, pending.ErrUnavailable) {
		t.Fatalf("settle of an unknown id: %v; want ErrNotFound", err)
	}
	// A mirror that cannot catch up does not claim a question is missing:
	// it does not know (503), the question may exist.
	b.Stop()
	if err := a.store.Create(ctx, question("q2")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "q2"); !errors.Is(err, pending.ErrUnavailable) {
		t.Fatalf("Get through a mirror that cannot catch up: %v; want ErrUnavailable", err)
	}
}

// A replica whose position was pruned from the log (cut off for longer
// than KeepChanges) resynchronises from the records: it gets every
// pending question, skips ended ones it never knew, and follows on.
func TestPrunedLogResyncs(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{})
	db := open(t, url)
	j := db.Questions()
	observed := newRecorder()
	m, err := pending.Open(context.Background(), pending.Options{Journal: j, OnObserve: observed.record})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"q1", "q2"} {
		if err := a.store.Create(ctx, question(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.store.Settle(ctx, "q1", reply("x")); err != nil {
		t.Fatal(err)
	}
	// A tailer that keeps changes for a millisecond prunes them all.
	pruner := db.Tail(0, func(pgstore.Change) {}, pgstore.TailOptions{KeepChanges: time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	if err := a.store.Create(ctx, question("q3")); err != nil {
		t.Fatal(err)
	}
	if err := pruner.WaitFor(ctx, nextXid(t, db)); err != nil {
		t.Fatal(err)
	}
	pruner.Stop()
	var left int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM changes WHERE seq < 4").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d old changes left after pruning (%v); want 0", left, err)
	}

	b := db.Follow(m, j, pgstore.TailOptions{})
	t.Cleanup(func() {
		b.Stop()
		_ = m.Close(ctx)
	})
	if err := b.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := m.List(ctx, pending.Filter{})
	if err != nil || len(list) != 2 || list[0].ID != "q2" || list[1].ID != "q3" {
		t.Fatalf("after the resync B lists %v, %v; want q2 and q3", ids(list), err)
	}
	if _, err := a.store.Settle(ctx, "q2", reply("y")); err != nil {
		t.Fatal(err)
	}
	if got := observed.until(t, "q2", true); got.Ended.Result.Content["pick"] != "y" {
		t.Fatalf("B observed %+v", got.Ended)
	}
}

func ids(qs []*pending.Question) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.ID
	}
	return out
}

// A replica cut off while a question it holds pending was ended elsewhere
// and its record deleted (retention) does not keep it pending forever: the
// resync ends it here, announced in the order the resync applied it, and
// wakes its waiters.
func TestResyncEndsQuestionsWhoseRecordsWereDeleted(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{})
	db := open(t, url)
	j := db.Questions()
	observed := newRecorder()
	ctx := context.Background()
	if err := a.store.Create(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	m, err := pending.Open(ctx, pending.Options{Journal: j, OnObserve: observed.record})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(ctx) })
	if _, err := a.store.Settle(ctx, "q1", reply("x")); err != nil {
		t.Fatal(err)
	}
	if err := a.db.Questions().Delete(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	pruner := db.Tail(0, func(pgstore.Change) {}, pgstore.TailOptions{KeepChanges: time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	if err := a.store.Create(ctx, question("q2")); err != nil {
		t.Fatal(err)
	}
	if err := pruner.WaitFor(ctx, 3); err != nil {
		t.Fatal(err)
	}
	pruner.Stop()

	announced := newRecorder()
	b := db.Follow(m, j, pgstore.TailOptions{Announce: announced.record})
	t.Cleanup(b.Stop)
	if err := b.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := m.List(ctx, pending.Filter{})
	if err != nil || len(list) != 1 || list[0].ID != "q2" {
		t.Fatalf("after the resync B lists %v, %v; want only q2", ids(list), err)
	}
	got, err := m.Wait(ctx, "q1")
	if err != nil || got.Ended == nil || got.Ended.Ending != pending.EndRejected {
		t.Fatalf("B's wait for q1: %+v, %v; want it ended, rejected", got, err)
	}
	if q := announced.next(t); q.ID != "q2" || q.Ended != nil {
		t.Fatalf("announced first %s (ended %v); want q2 asked", q.ID, q.Ended != nil)
	}
	if q := announced.next(t); q.ID != "q1" || q.Ended == nil {
		t.Fatalf("announced then %s (ended %v); want q1's ending", q.ID, q.Ended != nil)
	}
}

// A miss catches up even while every request connection of the replica's
// pool is taken (under load, by changes waiting for their commit): the
// log's position is read on connections of its own, not queued behind
// them.
func TestMissCatchesUpWhileTheRequestPoolIsTaken(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{})
	db := open(t, url+"&pool_max_conns=3") // the tailer's and two for requests
	_, b, release := laggingMirror(t, db)
	ctx := context.Background()
	if err := b.CatchUp(ctx); err != nil { // the tailer holds its connection
		t.Fatal(err)
	}
	for range db.Pool().Config().MaxConns - 1 {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := db.Pool().Acquire(actx)
		cancel()
		if err != nil {
			t.Fatalf("taking the request connections: %v", err)
		}
		defer conn.Release()
	}
	if err := a.store.Create(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(200*time.Millisecond, func() { close(release) })
	gctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	got, err := b.Get(gctx, "q1")
	if err != nil || got.ID != "q1" {
		t.Fatalf("Get through the mirror with its request pool taken: %+v, %v; want q1", got, err)
	}
}

// laggingMirror is a replica's mirror on db whose tail applies nothing
// until release is closed; m is its store, b the mirror.
func laggingMirror(t *testing.T, db *pgstore.DB) (m *pending.Store, b *pgstore.Mirror, release chan struct{}) {
	t.Helper()
	j := db.Questions()
	m, err := pending.Open(context.Background(), pending.Options{Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	release = make(chan struct{})
	tail := db.Tail(j.LoadedSeq(), func(c pgstore.Change) {
		<-release // the tail lags until the test lets it go
		if c.Question != nil {
			_, _ = m.Observe(context.Background(), c.Question)
		}
	}, pgstore.TailOptions{})
	b = db.Mirror(m, tail)
	t.Cleanup(func() {
		b.Stop()
		_ = m.Close(context.Background())
	})
	return m, b, release
}

// holdTails opens a transaction with an id on db and keeps it open until
// the returned function commits it: no tailer reads past it meanwhile, as
// if every replica lagged.
func holdTails(t *testing.T, db *pgstore.DB) (release func()) {
	t.Helper()
	ctx := context.Background()
	held, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := held.Commit(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// A replica whose tail reaches a question's ending only after another
// replica forgot the question (retention deleted its record) still ends
// it: it is not kept pending for ever, its waiters wake, and the ending is
// announced (issue 22, item 10).
func TestLaggingReplicaEndsAQuestionForgottenMeanwhile(t *testing.T) {
	url := database(t)
	announced := newRecorder()
	b := newReplica(t, url, pending.Options{})
	b.tail.Stop() // replaced by one that announces
	b.tail = b.db.Follow(b.store, b.journal, pgstore.TailOptions{PollInterval: 200 * time.Millisecond, Announce: announced.record})
	t.Cleanup(b.tail.Stop)
	other := open(t, url).Questions() // replica A, the one that ends and forgets
	ctx := context.Background()
	if err := other.Put(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	b.observed.until(t, "q1", false)

	release := holdTails(t, b.db)
	ended := question("q1")
	o := reply("red")
	ended.Ended = &o
	if err := other.Put(ctx, ended); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	release()

	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := b.store.Wait(waitCtx, "q1")
	if err != nil || got.Ended == nil {
		t.Fatalf("B's wait for q1: %+v, %v; want it ended", got, err)
	}
	if list, err := b.store.List(ctx, pending.Filter{}); err != nil || len(list) != 0 {
		t.Fatalf("B lists %v, %v; want nothing pending", ids(list), err)
	}
	announced.until(t, "q1", true)
}

// A replica's own changes whose records were deleted before its tail read
// them are not kept noted for ever (issue 22, item 10).
func TestOwnChangesOfForgottenQuestionsAreNotKept(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{})
	ctx := context.Background()
	release := holdTails(t, a.db)
	if err := a.store.Create(ctx, question("q1")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Settle(ctx, "q1", reply("red")); err != nil {
		t.Fatal(err)
	}
	if err := a.db.Questions().Delete(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	release()
	if err := a.tail.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n := a.journal.OwnNoted(); n != 0 {
		t.Fatalf("%d of the replica's own changes still noted after its tail applied them", n)
	}
}
