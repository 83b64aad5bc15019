package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// Changes that arrive together are committed together (one batch), and
// each is refused or done on its own: creations beyond the limits, a
// taken id, a taken Idempotency-Key and endings of questions already
// ended fail alone while the rest commit, and the counters stay equal to
// what is pending.
func TestBatchedChangesAreRefusedOneByOne(t *testing.T) {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, database(t), pgstore.Options{MaxPending: 1000, MaxPendingPerAgent: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j := s.Questions()
	// Ten pending questions to end, two of them twice.
	var toEnd []*pending.Question
	for i := range 10 {
		q := question(fmt.Sprintf("end-%d", i))
		if err := j.Put(ctx, q); err != nil {
			t.Fatal(err)
		}
		toEnd = append(toEnd, q)
	}
	type attempt struct {
		q    *pending.Question
		want error // nil, or the sentinel one of the pair must get
	}
	var attempts []attempt
	for i, q := range toEnd {
		ended := *q
		o := reply("x")
		o.At = time.Now()
		ended.Ended = &o
		attempts = append(attempts, attempt{q: &ended})
		if i < 2 {
			again := ended
			attempts = append(attempts, attempt{q: &again}) // one of the two loses
		}
	}
	for i := range 45 { // 5 owners × 9: one over each owner's limit
		q := question(fmt.Sprintf("ask-%d", i))
		q.Owner = fmt.Sprintf("agent-%d", i%5)
		attempts = append(attempts, attempt{q: q})
	}
	dupID := question("end-0") // a taken id
	dupKey1, dupKey2 := question("key-1"), question("key-2")
	dupKey1.IdempotencyKey, dupKey2.IdempotencyKey = "same", "same"
	attempts = append(attempts, attempt{q: dupID}, attempt{q: dupKey1}, attempt{q: dupKey2})

	errs := make([]error, len(attempts))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, a := range attempts {
		wg.Go(func() {
			<-start
			errs[i] = j.Put(ctx, a.q)
		})
	}
	close(start)
	wg.Wait()

	count := map[string]int{}
	for i, a := range attempts {
		switch err := errs[i]; {
		case err == nil:
			count["done"]++
		case errors.Is(err, pending.ErrFull):
			count["full"]++
		case errors.Is(err, pending.ErrExists):
			count["exists"]++
		case errors.Is(err, pending.ErrNotFound) && a.q.Ended != nil:
			count["lost"]++
		default:
			t.Errorf("%s (ended %v): unexpected %v", a.q.ID, a.q.Ended != nil, err)
		}
	}
	// The 10 endings done and their 2 repeats lost; of 45 asks by 5 agents
	// of limit 8, 40 done and 5 refused; the taken id refused, and one of
	// the two creations with one key.
	want := map[string]int{"done": 10 + 40 + 1, "lost": 2, "full": 5, "exists": 2}
	if !maps.Equal(count, want) {
		t.Errorf("outcomes %v; want %v", count, want)
	}
	var pendingNow, stripes, owners int
	if err := s.Pool().QueryRow(ctx, "SELECT (SELECT count(*) FROM questions WHERE NOT ended), (SELECT sum(n) FROM pending_stripes), (SELECT coalesce(sum(n), 0) FROM pending_owners)").Scan(&pendingNow, &stripes, &owners); err != nil {
		t.Fatal(err)
	}
	if pendingNow != 41 || stripes != pendingNow || owners != 40 {
		t.Errorf("%d pending, the stripes count %d, the agents' counters %d; want 41, 41, 40", pendingNow, stripes, owners)
	}
	var wrong int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM (SELECT owner, count(*) AS c FROM questions WHERE NOT ended AND owner <> '' GROUP BY owner) q FULL JOIN pending_owners o USING (owner) WHERE coalesce(q.c, 0) <> coalesce(o.n, 0)").Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 {
		t.Errorf("%d agents' counters differ from their pending questions", wrong)
	}
	// They went in batches: fewer transactions than changes.
	var changes, transactions int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*), count(DISTINCT xid) FROM changes WHERE question_id NOT LIKE 'end-%' OR kind = 'ended'").Scan(&changes, &transactions); err != nil {
		t.Fatal(err)
	}
	if changes != 51 || transactions >= changes {
		t.Errorf("%d changes in %d transactions; want 51 in fewer", changes, transactions)
	}
	t.Logf("outcomes %v; %d pending; %d changes in %d transactions", count, pendingNow, changes, transactions)
}
