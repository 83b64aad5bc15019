package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
	"github.com/questiond/questiond/internal/pgtest"
)

// open opens a store on url, closed when the test ends.
func open(t testing.TB, url string) *pgstore.DB {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// replica is one replica's question store: a pending.Store restored from
// the shared database and following its change log.
type replica struct {
	db       *pgstore.DB
	store    *pending.Store
	tail     *pgstore.Mirror
	journal  *pgstore.Journal // the store's
	ends     *recorder        // OnEnd
	observed *recorder        // OnObserve
}

func newReplica(t testing.TB, url string, opts pending.Options) *replica {
	t.Helper()
	r := &replica{db: open(t, url), ends: newRecorder(), observed: newRecorder()}
	j := r.db.Questions()
	opts.Journal, opts.OnEnd, opts.OnObserve = j, r.ends.record, r.observed.record
	m, err := pending.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open replica: %v", err)
	}
	r.store, r.journal = m, j
	r.tail = r.db.Follow(m, j, pgstore.TailOptions{PollInterval: 200 * time.Millisecond})
	t.Cleanup(func() {
		r.tail.Stop()
		if err := m.Close(context.Background()); err != nil && !errors.Is(err, pending.ErrClosed) {
			t.Errorf("close replica: %v", err)
		}
	})
	return r
}

// recorder keeps the questions a callback was given, and wakes whoever
// waits for one.
type recorder struct {
	ch chan *pending.Question
}

func newRecorder() *recorder { return &recorder{ch: make(chan *pending.Question, 1000)} }

func (r *recorder) record(q *pending.Question) { r.ch <- q }

// next returns the next question recorded, failing after 10 s.
func (r *recorder) next(t testing.TB) *pending.Question {
	t.Helper()
	select {
	case q := <-r.ch:
		return q
	case <-time.After(10 * time.Second):
		t.Fatal("nothing recorded in 10 s")
		return nil
	}
}

// until returns the first question recorded with this id and state
// (ended or not), skipping others, failing after 10 s.
func (r *recorder) until(t testing.TB, id string, ended bool) *pending.Question {
	t.Helper()
	for {
		if q := r.next(t); q.ID == id && (q.Ended != nil) == ended {
			return q
		}
	}
}

// none fails if anything was recorded, or is within a short while.
func (r *recorder) none(t testing.TB, what string) {
	t.Helper()
	select {
	case q := <-r.ch:
		t.Fatalf("%s: unexpectedly recorded %s (ended %+v)", what, q.ID, q.Ended)
	case <-time.After(300 * time.Millisecond):
	}
}

func question(id string) *pending.Question {
	return &pending.Question{ID: id, SessionID: "ses_1", Message: "Pick one", Schema: []byte(`{"type":"object"}`), CreatedAt: time.Now()}
}

func reply(answer string) pending.Outcome {
	return pending.Outcome{Ending: pending.EndReplied, Result: pending.Result{Action: pending.ActionAccept, Content: map[string]any{"pick": answer}}, Answers: [][]string{{answer}}}
}

func database(t testing.TB) string { return pgtest.Database(t) }
