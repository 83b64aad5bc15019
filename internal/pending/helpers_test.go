package pending_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/questiond/questiond/internal/pending"
)

// newStore returns a store that is closed when the test ends.
func newStore(t testing.TB, opts pending.Options) *pending.Store {
	t.Helper()
	m := pending.New(opts)
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil && !errors.Is(err, pending.ErrClosed) {
			t.Errorf("close store: %v", err)
		}
	})
	return m
}

// ask builds a question with the given id, changed by each mod.
func ask(id string, mods ...func(*pending.Question)) *pending.Question {
	q := &pending.Question{ID: id, SessionID: "ses_1", Message: "Pick one", Schema: []byte(`{"type":"object"}`)}
	for _, mod := range mods {
		mod(q)
	}
	return q
}

func mustCreate(t testing.TB, m *pending.Store, q *pending.Question) {
	t.Helper()
	if err := m.Create(context.Background(), q); err != nil {
		t.Fatalf("create %q: %v", q.ID, err)
	}
}

func replied(answer string) pending.Outcome {
	return pending.Outcome{
		Ending:  pending.EndReplied,
		Result:  pending.Result{Action: pending.ActionAccept, Content: map[string]any{"pick": answer}},
		Answers: [][]string{{answer}},
	}
}

func cancelled(how pending.Ending) pending.Outcome {
	return pending.Outcome{Ending: how, Result: pending.Result{Action: pending.ActionCancel}}
}

// endLog records every OnEnd call.
type endLog struct {
	mu   sync.Mutex
	ends []*pending.Question
}

func (l *endLog) record(q *pending.Question) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends = append(l.ends, q)
}

func (l *endLog) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.ends {
		if q.ID == id {
			n++
		}
	}
	return n
}

func (l *endLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ends)
}

// last returns the latest ending reported for id, or nil.
func (l *endLog) last(id string) *pending.Question {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.ends) - 1; i >= 0; i-- {
		if l.ends[i].ID == id {
			return l.ends[i]
		}
	}
	return nil
}

// gate parks the goroutines that call park until open is called, and
// counts them so a test can wait until n are parked.
type gate struct {
	mu      sync.Mutex
	parked  int
	arrived chan struct{} // receives one value per parked goroutine
	release chan struct{}
	once    sync.Once
}

func newGate() *gate {
	return &gate{arrived: make(chan struct{}, 64), release: make(chan struct{})}
}

func (g *gate) park() {
	g.mu.Lock()
	g.parked++
	g.mu.Unlock()
	g.arrived <- struct{}{}
	<-g.release
}

// await blocks until n more goroutines have parked.
func (g *gate) await(n int) {
	for range n {
		<-g.arrived
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func ids(qs []*pending.Question) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.ID
	}
	return out
}

// openStore restores a store from j (Open) and closes it when the test ends;
// the journal is left open.
func openStore(t testing.TB, j pending.Journal, opts pending.Options) *pending.Store {
	t.Helper()
	opts.Journal = j
	m, err := pending.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil && !errors.Is(err, pending.ErrClosed) {
			t.Errorf("close store: %v", err)
		}
	})
	return m
}

// storeKinds builds a store of each kind the concurrency tests run against:
// the plain memory store (no journal), and durable stores on the fake
// journal and on a Bolt file. Each is closed (then its journal) when the test
// ends.
var storeKinds = map[string]func(t *testing.T, opts pending.Options) (*pending.Store, pending.Journal){
	"memory": func(t *testing.T, opts pending.Options) (*pending.Store, pending.Journal) {
		return newStore(t, opts), nil
	},
	"fake journal": func(t *testing.T, opts pending.Options) (*pending.Store, pending.Journal) {
		j := newFakeJournal()
		return openStore(t, j, opts), j
	},
	"bolt": func(t *testing.T, opts pending.Options) (*pending.Store, pending.Journal) {
		j := openBolt(t, "", pending.BoltOptions{})
		return openStore(t, j, opts), j
	},
}

// journaled opens a store (openStore) over a fresh fake journal; with the
// test's context, it is how most tests of the durable store begin.
func journaled(t *testing.T, opts pending.Options) (context.Context, *fakeJournal, *pending.Store) {
	t.Helper()
	j := newFakeJournal()
	return t.Context(), j, openStore(t, j, opts)
}

// recording is a memory store (newStore) whose endings ends records
// (OnEnd), with the test's context.
func recording(t *testing.T) (ctx context.Context, m *pending.Store, ends *endLog) {
	t.Helper()
	ends = new(endLog)
	return t.Context(), newStore(t, pending.Options{OnEnd: ends.record}), ends
}

// createAgain creates id again, with the message "again", in a goroutine;
// its error comes on the channel.
func createAgain(ctx context.Context, m *pending.Store, id string) <-chan error {
	created := make(chan error, 1)
	go func() { created <- m.Create(ctx, ask(id, func(q *pending.Question) { q.Message = "again" })) }()
	return created
}

// createWaitsFor checks that a create (createAgain) of an id whose old
// record's deletion is parked at g waits for it, and succeeds once g lets
// the deletion go; deletion names it in failures. In a synctest bubble.
func createWaitsFor(t *testing.T, created <-chan error, g *gate, deletion string) {
	t.Helper()
	synctest.Wait()
	if len(created) != 0 {
		t.Fatal("create of an id whose record is being deleted did not wait")
	}
	g.open()
	if err := <-created; err != nil {
		t.Fatalf("create after the %s: %v", deletion, err)
	}
}

// expectCreatedAgain fails unless the journal holds id as createAgain
// created it: pending, with the message "again".
func expectCreatedAgain(t *testing.T, j *fakeJournal, id string) {
	t.Helper()
	if r := j.record(id); r == nil || r.Ended != nil || r.Message != "again" {
		t.Errorf("journal record = %+v, want the new pending question", r)
	}
}

// expectPending fails the test unless question id of m is pending; what
// names it in the failure.
func expectPending(t *testing.T, ctx context.Context, m *pending.Store, id, what string) {
	t.Helper()
	if q, err := m.Get(ctx, id); err != nil || q.Ended != nil {
		t.Errorf("%s = %+v, %v; want it pending", what, q, err)
	}
}
