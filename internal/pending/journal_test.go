package pending_test

// The Journal contract, run against the Bolt file and the test fake alike.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// openBolt opens a journal file in the test's directory (or at path, when
// given) and closes it when the test ends.
func openBolt(t testing.TB, path string, opts pending.BoltOptions) *pending.Bolt {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "questions.db")
	}
	b, err := pending.OpenBolt(path, opts)
	if err != nil {
		t.Fatalf("open bolt: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

var journals = map[string]func(t *testing.T) pending.Journal{
	"bolt": func(t *testing.T) pending.Journal { return openBolt(t, "", pending.BoltOptions{}) },
	"fake": func(*testing.T) pending.Journal { return newFakeJournal() },
}

// fullQuestion has every field a record keeps set.
func fullQuestion(id string) *pending.Question {
	multiple := true
	return &pending.Question{
		ID: id, SessionID: "ses_1", Directory: "/work", Owner: "agent-1", Client: "Claude Code", Message: "Pick colours",
		Schema:          json.RawMessage(`{"type":"object","properties":{"c":{"type":"string"}}}`),
		Questions:       []elicit.QuestionInfo{{Question: "Colours?", Header: "Colours", Options: []elicit.QuestionOption{{Label: "Red", Description: "warm"}}, Multiple: &multiple}},
		Tool:            &pending.Tool{MessageID: "msg_1", CallID: "call_1"},
		MCPTool:         &pending.MCPTool{Server: "github", Name: "create_issue"},
		Title:           "github via opencode",
		AskingSessionID: "ses_child",
		CreatedAt:       time.Date(2026, 3, 4, 5, 6, 7, 891, time.UTC),
		Deadline:        time.Date(2026, 3, 4, 6, 6, 7, 0, time.UTC),
	}
}

func endedQuestion(id string) *pending.Question {
	q := fullQuestion(id)
	q.Ended = &pending.Outcome{
		Ending: pending.EndReplied,
		Result: pending.Result{Action: pending.ActionAccept, Content: elicit.Content{
			"name": "Ada", "age": int64(36), "ratio": 0.25, "ok": true, "tags": []string{"a", "b"},
		}},
		Answers: [][]string{{"Ada"}, {"36"}},
		At:      time.Date(2026, 3, 4, 5, 7, 0, 0, time.UTC),
	}
	return q
}

// asJSON is how records are compared: what an API client would see.
func asJSON(t testing.TB, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(data)
}

func loadAll(t testing.TB, j pending.Journal) map[string]*pending.Question {
	t.Helper()
	qs, err := j.Load(context.Background())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	byID := make(map[string]*pending.Question, len(qs))
	for _, q := range qs {
		if _, dup := byID[q.ID]; dup {
			t.Fatalf("load returned %s twice", q.ID)
		}
		byID[q.ID] = q
	}
	return byID
}

func TestJournalRoundTrip(t *testing.T) {
	t.Parallel()
	for name, open := range journals {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			j := open(t)
			if got := loadAll(t, j); len(got) != 0 {
				t.Fatalf("new journal holds %d records", len(got))
			}
			pendingQ, endedQ := fullQuestion("que_1"), endedQuestion("que_2")
			if err := j.Put(ctx, pendingQ, endedQ); err != nil {
				t.Fatalf("put: %v", err)
			}
			want := map[string]string{"que_1": asJSON(t, pendingQ), "que_2": asJSON(t, endedQ)}
			// The journal keeps its own copy.
			pendingQ.Message, endedQ.Ended.Answers[0][0] = "changed", "changed"

			got := loadAll(t, j)
			if len(got) != 2 {
				t.Fatalf("load = %d records, want 2", len(got))
			}
			for id, w := range want {
				if g := asJSON(t, got[id]); g != w {
					t.Errorf("record %s:\n got %s\nwant %s", id, g, w)
				}
			}

			// Overwrite: the pending question ends.
			ended := fullQuestion("que_1")
			ended.Ended = &pending.Outcome{Ending: pending.EndTimeout, Result: pending.Result{Action: pending.ActionCancel}, At: time.Now()}
			if err := j.Put(ctx, ended); err != nil {
				t.Fatalf("put ended: %v", err)
			}
			if got := loadAll(t, j); got["que_1"].Ended == nil || got["que_1"].Ended.Ending != pending.EndTimeout {
				t.Errorf("after overwrite que_1 = %s, want it timed out", asJSON(t, got["que_1"]))
			}

			if err := j.Delete(ctx, "que_2", "que_unknown"); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if got := loadAll(t, j); len(got) != 1 || got["que_1"] == nil {
				t.Errorf("after delete: %d records, want only que_1", len(got))
			}
			if err := j.Put(ctx); err != nil {
				t.Errorf("put of nothing: %v", err)
			}
			if err := j.Delete(ctx); err != nil {
				t.Errorf("delete of nothing: %v", err)
			}
		})
	}
}

func TestJournalConcurrentWrites(t *testing.T) {
	t.Parallel()
	const writers = 64
	for name, open := range journals {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			j := open(t)
			for i := range writers {
				if err := j.Put(ctx, fullQuestion(fmt.Sprintf("que_old_%d", i))); err != nil {
					t.Fatalf("put: %v", err)
				}
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() {
					<-start
					if err := j.Put(ctx, endedQuestion(fmt.Sprintf("que_%d", i))); err != nil {
						t.Errorf("put: %v", err)
					}
					if err := j.Delete(ctx, fmt.Sprintf("que_old_%d", i)); err != nil {
						t.Errorf("delete: %v", err)
					}
				})
			}
			close(start)
			wg.Wait()
			got := loadAll(t, j)
			if len(got) != writers {
				t.Fatalf("load = %d records, want %d", len(got), writers)
			}
			for i := range writers {
				if q := got[fmt.Sprintf("que_%d", i)]; q == nil || q.Ended == nil {
					t.Errorf("que_%d missing or not ended", i)
				}
			}
		})
	}
}

// Concurrent writes share transactions, so they share fsyncs.
func TestBoltBatchesConcurrentCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := openBolt(t, "", pending.BoltOptions{})
	const writers = 64
	before := b.Commits()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			if err := b.Put(ctx, fullQuestion(fmt.Sprintf("que_%d", i))); err != nil {
				t.Errorf("put: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	commits := b.Commits() - before
	t.Logf("%d concurrent puts took %d commits", writers, commits)
	if commits > writers/4 {
		t.Errorf("%d concurrent puts took %d commits, want at most %d", writers, commits, writers/4)
	}
	if got := loadAll(t, b); len(got) != writers {
		t.Errorf("load = %d records, want %d", len(got), writers)
	}
}

// A write that fails (here an id bbolt refuses as a key) fails alone, even
// when it shares a commit with others.
func TestBoltFailedWriteFailsAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := openBolt(t, "", pending.BoltOptions{})
	const writers = 8
	queued := make(chan struct{}, writers+1)
	b.SetOnQueued(func() { queued <- struct{}{} })
	release := b.HoldWriter() // the first write leads, and waits for it
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if err := b.Put(ctx, fullQuestion(fmt.Sprintf("que_%d", i))); err != nil {
				t.Errorf("put: %v", err)
			}
		})
	}
	for range writers {
		<-queued
	}
	// Queued behind the leader with good writes, whichever group it joins.
	var badErr error
	wg.Go(func() { badErr = b.Put(ctx, fullQuestion(strings.Repeat("x", 40_000))) })
	<-queued
	release()
	wg.Wait()
	if !errors.Is(badErr, pending.ErrUnavailable) {
		t.Errorf("put with an over-long id: err = %v, want ErrUnavailable", badErr)
	}
	if got := loadAll(t, b); len(got) != writers {
		t.Errorf("load = %d records, want the %d good ones", len(got), writers)
	}
}

// Result content comes back with the Go types elicit produces, not just the
// same JSON.
func TestBoltKeepsContentTypes(t *testing.T) {
	t.Parallel()
	b := openBolt(t, "", pending.BoltOptions{})
	if err := b.Put(t.Context(), endedQuestion("que_1")); err != nil {
		t.Fatalf("put: %v", err)
	}
	content := loadAll(t, b)["que_1"].Ended.Result.Content
	want := map[string]string{"name": "string", "age": "int64", "ratio": "float64", "ok": "bool", "tags": "[]string"}
	for key, typ := range want {
		if got := fmt.Sprintf("%T", content[key]); got != typ {
			t.Errorf("content[%q] is %s (%v), want %s", key, got, content[key], typ)
		}
	}
}

func TestBoltAfterClose(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	b := openBolt(t, path, pending.BoltOptions{})
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	calls := map[string]func() error{
		"load":   func() error { _, err := b.Load(ctx); return err },
		"put":    func() error { return b.Put(ctx, fullQuestion("que_1")) },
		"delete": func() error { return b.Delete(ctx, "que_1") },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, pending.ErrUnavailable) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s after close: err = %v, want ErrUnavailable naming %s", name, err, path)
		}
	}
}

func TestBoltCancelledContext(t *testing.T) {
	t.Parallel()
	b := openBolt(t, "", pending.BoltOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Put(ctx, fullQuestion("que_1")); !errors.Is(err, context.Canceled) {
		t.Errorf("put with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if got := loadAll(t, b); len(got) != 0 {
		t.Errorf("a cancelled put stored %d records", len(got))
	}
}
