package pending_test

// Restarts on a real journal file: a store is closed with its journal, and a
// new one is opened on the same file. Real time passes where a deadline or a
// retention must run out while no store is running.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// boltStore is a durable store on the file at path: opened by start, closed
// (store, then journal) by stop or when the test ends.
type boltStore struct {
	t       *testing.T
	path    string
	journal *pending.Bolt
	*pending.Store
}

func startBoltStore(t *testing.T, path string, opts pending.Options) *boltStore {
	t.Helper()
	journal, err := pending.OpenBolt(path, pending.BoltOptions{})
	if err != nil {
		t.Fatalf("open bolt: %v", err)
	}
	opts.Journal = journal
	m, err := pending.Open(t.Context(), opts)
	if err != nil {
		journal.Close()
		t.Fatalf("open store: %v", err)
	}
	s := &boltStore{t: t, path: path, journal: journal, Store: m}
	t.Cleanup(s.stop)
	return s
}

func (s *boltStore) stop() {
	if err := s.Close(context.Background()); err != nil && !errors.Is(err, pending.ErrClosed) {
		s.t.Errorf("close store: %v", err)
	}
	if err := s.journal.Close(); err != nil {
		s.t.Errorf("close journal: %v", err)
	}
}

func TestRestartKeepsQuestions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	first := startBoltStore(t, path, pending.Options{})
	custom := true
	questions := []*pending.Question{
		ask("que_1", func(q *pending.Question) {
			q.Directory, q.Owner, q.Client, q.Deadline = "/work", "agent-1", "Claude Code", time.Now().Add(time.Hour)
			q.Questions = []elicit.QuestionInfo{{Question: "Colour?", Header: "Colour", Options: []elicit.QuestionOption{{Label: "Red"}}, Custom: &custom}}
			q.Tool = &pending.Tool{MessageID: "msg_1", CallID: "call_1"}
		}),
		ask("que_2"),
		ask("que_3", func(q *pending.Question) { q.SessionID = "ses_2" }),
		ask("que_4"),
	}
	for _, q := range questions {
		mustCreate(t, first.Store, q)
	}
	if _, err := first.Settle(ctx, "que_2", pending.Outcome{
		Ending: pending.EndReplied, Answers: [][]string{{"Ada"}, {"36"}},
		Result: pending.Result{Action: pending.ActionAccept, Content: elicit.Content{"name": "Ada", "age": int64(36)}},
	}); err != nil {
		t.Fatalf("settle: %v", err)
	}
	if _, err := first.Settle(ctx, "que_4", cancelled(pending.EndRejected)); err != nil {
		t.Fatalf("settle: %v", err)
	}
	before, _ := first.List(ctx, pending.Filter{})
	wantEnded := map[string]string{}
	for _, id := range []string{"que_2", "que_4"} {
		q, _ := first.Get(ctx, id)
		wantEnded[id] = asJSON(t, q)
	}
	first.stop()

	second := startBoltStore(t, path, pending.Options{})
	after, err := second.List(ctx, pending.Filter{})
	if err != nil || fmt.Sprint(ids(after)) != "[que_1 que_3]" {
		t.Fatalf("list after restart = %v, %v; want [que_1 que_3]", ids(after), err)
	}
	for i := range after {
		if got, want := asJSON(t, after[i]), asJSON(t, before[i]); got != want {
			t.Errorf("restored %s:\n got %s\nwant %s", after[i].ID, got, want)
		}
		if !after[i].CreatedAt.Equal(before[i].CreatedAt) || !after[i].Deadline.Equal(before[i].Deadline) {
			t.Errorf("restored %s: created %v, deadline %v; want %v, %v", after[i].ID,
				after[i].CreatedAt, after[i].Deadline, before[i].CreatedAt, before[i].Deadline)
		}
	}
	for id, want := range wantEnded {
		q, err := second.Wait(ctx, id)
		if err != nil || asJSON(t, q) != want {
			t.Errorf("wait for %s after restart = %s, %v; want %s", id, asJSON(t, q), err, want)
		}
	}
	if _, err := second.Settle(ctx, "que_4", replied("late")); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("settle of a question ended before the restart: err = %v, want ErrNotFound", err)
	}

	// A reply after the restart is kept by the next one.
	if _, err := second.Settle(ctx, "que_3", replied("Blue")); err != nil {
		t.Fatalf("settle after restart: %v", err)
	}
	second.stop()
	third := startBoltStore(t, path, pending.Options{})
	if q, err := third.Get(ctx, "que_3"); err != nil || q.Ended == nil || q.Ended.Answers[0][0] != "Blue" {
		t.Errorf("que_3 after the second restart = %+v, %v; want the reply", q, err)
	}
	if l, _ := third.List(ctx, pending.Filter{}); fmt.Sprint(ids(l)) != "[que_1]" {
		t.Errorf("list after the second restart = %v, want [que_1]", ids(l))
	}
}

// notifyEnds is an OnEnd that records every ending and signals it.
type notifyEnds struct {
	endLog
	ended chan string
}

func newNotifyEnds() *notifyEnds { return &notifyEnds{ended: make(chan string, 16)} }

func (n *notifyEnds) record(q *pending.Question) {
	n.endLog.record(q)
	n.ended <- q.ID
}

func TestRestartKeepsDeadlines(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	first := startBoltStore(t, path, pending.Options{})
	start := time.Now()
	// Margins of a second and more: on a loaded machine creating three
	// questions has taken longer than 100 ms, and que_overdue then timed
	// out in the first store instead of at the second's open.
	overdue, soon := start.Add(time.Second), start.Add(3*time.Second)
	mustCreate(t, first.Store, ask("que_overdue", func(q *pending.Question) { q.Deadline = overdue }))
	mustCreate(t, first.Store, ask("que_soon", func(q *pending.Question) { q.Deadline = soon }))
	mustCreate(t, first.Store, ask("que_later", func(q *pending.Question) { q.Deadline = start.Add(time.Hour) }))
	first.stop()
	time.Sleep(time.Until(overdue)) // down while the first deadline passes

	ends := newNotifyEnds()
	second := startBoltStore(t, path, pending.Options{OnEnd: ends.record})
	if time.Now().After(soon) {
		t.Skip("restarting took longer than this test's deadlines allow")
	}
	if r := ends.last("que_overdue"); ends.total() != 1 || r.Ended.Ending != pending.EndTimeout || r.Ended.Result.Action != pending.ActionCancel {
		t.Fatalf("at open OnEnd got %d endings, last %+v; want que_overdue timed out", ends.total(), r)
	}
	<-ends.ended
	if l, _ := second.List(ctx, pending.Filter{}); fmt.Sprint(ids(l)) != "[que_soon que_later]" {
		t.Errorf("list after restart = %v, want [que_soon que_later]", ids(l))
	}

	// The other deadline keeps counting from where it was set.
	select {
	case id := <-ends.ended:
		r := ends.last(id)
		if id != "que_soon" || r.Ended.Ending != pending.EndTimeout || r.Ended.At.Before(soon) {
			t.Errorf("OnEnd got %s ending %+v, want que_soon timed out at or after %v", id, r.Ended, soon)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("que_soon did not time out")
	}
	second.stop()

	third := startBoltStore(t, path, pending.Options{OnEnd: ends.record})
	for _, id := range []string{"que_overdue", "que_soon"} {
		if q, err := third.Get(ctx, id); err != nil || q.Ended == nil || q.Ended.Ending != pending.EndTimeout {
			t.Errorf("%s after another restart = %+v, %v; want timed out", id, q, err)
		}
	}
	if n := ends.total(); n != 2 {
		t.Errorf("OnEnd called %d times over three starts, want 2", n)
	}
}

func TestRestartForgetsExpiredResults(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const retention = 200 * time.Millisecond
	path := filepath.Join(t.TempDir(), "questions.db")
	first := startBoltStore(t, path, pending.Options{Retention: retention})
	mustCreate(t, first.Store, ask("que_old"))
	mustCreate(t, first.Store, ask("que_pending"))
	ended, err := first.Settle(ctx, "que_old", replied("Red"))
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	first.stop()
	time.Sleep(time.Until(ended.Ended.At.Add(retention)))

	second := startBoltStore(t, path, pending.Options{Retention: retention})
	if _, err := second.Get(ctx, "que_old"); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("get of an expired result: err = %v, want ErrNotFound", err)
	}
	records := loadAll(t, second.journal)
	if len(records) != 1 || records["que_pending"] == nil {
		t.Errorf("the file holds %d records after restart, want only que_pending", len(records))
	}
}
