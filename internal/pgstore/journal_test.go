package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
)

// Many endings of one question from two replicas' pools at once: exactly
// one commits; every other gets ErrNotFound (never ErrUnavailable), and the
// record holds the winner's ending.
func TestConcurrentEndingsOneWins(t *testing.T) {
	url := database(t)
	a, b := open(t, url).Questions(), open(t, url).Questions()
	ctx := context.Background()
	q := question("q1")
	if err := a.Put(ctx, q); err != nil {
		t.Fatal(err)
	}
	const endings = 16
	var wins atomic.Int32
	var winner atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range endings {
		j := a
		if i%2 == 1 {
			j = b
		}
		wg.Go(func() {
			rec := *q
			o := reply(fmt.Sprint(i))
			o.At = time.Now()
			rec.Ended = &o
			<-start
			err := j.Put(ctx, &rec)
			switch {
			case err == nil:
				wins.Add(1)
				winner.Store(fmt.Sprint(i))
			case !errors.Is(err, pending.ErrNotFound) || errors.Is(err, pending.ErrUnavailable):
				t.Errorf("losing ending %d: %v; want ErrNotFound only", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d endings won; want exactly 1", wins.Load())
	}
	records, err := b.Load(ctx)
	if err != nil || len(records) != 1 || records[0].Ended == nil {
		t.Fatalf("load: %v, %v", records, err)
	}
	if got := records[0].Ended.Result.Content["pick"]; got != winner.Load() {
		t.Fatalf("stored ending picks %v; the winner was %v", got, winner.Load())
	}
	if b.LoadedSeq() <= 0 {
		t.Fatalf("log position after one creation and one ending = %d; want one past them", b.LoadedSeq())
	}
}

// A creation whose id is taken, or whose Idempotency-Key a live question
// of the same agent holds, is ErrExists; once that question has ended, the
// key is free.
func TestCreationConflictsAreErrExists(t *testing.T) {
	url := database(t)
	a, b := open(t, url).Questions(), open(t, url).Questions()
	ctx := context.Background()
	keyed := func(id string) *pending.Question {
		q := question(id)
		q.Owner, q.IdempotencyKey = "agent-1", "k1"
		return q
	}
	if err := a.Put(ctx, keyed("q1")); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]*pending.Question{"same id": question("q1"), "same key": keyed("q2")} {
		if err := b.Put(ctx, q); !errors.Is(err, pending.ErrExists) || errors.Is(err, pending.ErrUnavailable) {
			t.Errorf("%s: %v; want ErrExists only", name, err)
		}
	}
	other := keyed("q3")
	other.Owner = "agent-2"
	if err := b.Put(ctx, other); err != nil {
		t.Fatalf("another agent's same key: %v", err)
	}
	ended := keyed("q1")
	o := reply("x")
	o.At = time.Now()
	ended.Ended = &o
	if err := b.Put(ctx, ended); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, keyed("q4")); err != nil {
		t.Fatalf("the key after its question ended: %v", err)
	}
}

// A batch of endings is all or nothing: one already ended fails the batch
// with ErrNotFound and the others stay pending.
func TestBatchIsAllOrNothing(t *testing.T) {
	j := open(t, database(t)).Questions()
	ctx := context.Background()
	var recs []*pending.Question
	for _, id := range []string{"q1", "q2"} {
		q := question(id)
		if err := j.Put(ctx, q); err != nil {
			t.Fatal(err)
		}
		o := pending.Outcome{Ending: pending.EndTimeout, Result: pending.Result{Action: pending.ActionCancel}, At: time.Now()}
		q.Ended = &o
		recs = append(recs, q)
	}
	if err := j.Put(ctx, recs[1]); err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, recs...); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("batch with an ended question: %v; want ErrNotFound", err)
	}
	loaded, err := j.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range loaded {
		if q.ID == "q1" && q.Ended != nil {
			t.Fatal("q1 ended by a batch that failed")
		}
	}
}

// Results come back as they went in: whole numbers as int64, fractions as
// float64, lists of strings as []string, so a restored result encodes the
// same.
func TestRecordsRoundTrip(t *testing.T) {
	j := open(t, database(t)).Questions()
	ctx := context.Background()
	q := question("q1")
	q.Questions = nil
	if err := j.Put(ctx, q); err != nil {
		t.Fatal(err)
	}
	o := pending.Outcome{Ending: pending.EndReplied, At: time.Now(), Result: pending.Result{Action: pending.ActionAccept,
		Content: map[string]any{"n": int64(1 << 60), "f": 1.5, "tags": []string{"a", "b"}, "ok": true}}}
	q.Ended = &o
	if err := j.Put(ctx, q); err != nil {
		t.Fatal(err)
	}
	loaded, err := j.Load(ctx)
	if err != nil || len(loaded) != 1 {
		t.Fatal(loaded, err)
	}
	c := loaded[0].Ended.Result.Content
	if c["n"] != int64(1<<60) || c["f"] != 1.5 || fmt.Sprint(c["tags"]) != "[a b]" || c["ok"] != true {
		t.Fatalf("content came back as %#v", c)
	}
	if _, ok := c["tags"].([]string); !ok {
		t.Fatalf("tags came back as %T; want []string", c["tags"])
	}
}

var _ = pgstore.KindAsked

// The limits on pending questions hold across replicas: creations racing
// on two pools take exactly the places there are, the rest get
// pending.ErrFull, and an ending frees a place.
func TestLimitsHoldAcrossReplicas(t *testing.T) {
	url := database(t)
	opts := pgstore.Options{MaxPending: 5, MaxPendingPerAgent: 3}
	var journals []*pgstore.Journal
	for range 2 {
		s, err := pgstore.Open(context.Background(), url, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		journals = append(journals, s.Questions())
	}
	ctx := context.Background()
	var created, full atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			q := question(fmt.Sprintf("q%d", i))
			q.Owner = []string{"agent-1", "agent-2"}[i%2]
			switch err := journals[i%2].Put(ctx, q); {
			case err == nil:
				created.Add(1)
			case errors.Is(err, pending.ErrFull) && !errors.Is(err, pending.ErrUnavailable):
				full.Add(1)
			default:
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	// Each agent may hold 3, so 6 would fit them; the total allows 5.
	if created.Load() != 5 || full.Load() != 7 {
		t.Fatalf("%d created, %d refused; want 5 and 7", created.Load(), full.Load())
	}
	records, err := journals[0].Load(ctx)
	if err != nil || len(records) != 5 {
		t.Fatalf("%d stored (%v); want 5", len(records), err)
	}
	ended := records[0]
	o := reply("x")
	o.At = time.Now()
	ended.Ended = &o
	if err := journals[1].Put(ctx, ended); err != nil {
		t.Fatal(err)
	}
	q := question("after")
	q.Owner = ended.Owner
	if err := journals[0].Put(ctx, q); err != nil {
		t.Fatalf("a creation after an ending freed a place: %v", err)
	}
	q = question("beyond")
	q.Owner = "agent-3"
	if err := journals[0].Put(ctx, q); !errors.Is(err, pending.ErrFull) {
		t.Fatalf("a sixth pending question: %v; want ErrFull", err)
	}
}

// One agent's limit leaves the others their places.
func TestPerAgentLimit(t *testing.T) {
	s, err := pgstore.Open(context.Background(), database(t), pgstore.Options{MaxPendingPerAgent: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	j := s.Questions()
	ctx := context.Background()
	for i, owner := range []string{"agent-1", "agent-1", "agent-1", "agent-2", "", "", ""} {
		q := question(fmt.Sprintf("q%d", i))
		q.Owner = owner
		err := j.Put(ctx, q)
		if refused := errors.Is(err, pending.ErrFull); refused != (i == 2) || (err != nil && !refused) {
			t.Fatalf("create %d by %q: %v", i, owner, err)
		}
	}
}
