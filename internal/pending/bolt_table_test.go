package pending_test

// Tables: named buckets of small records beside the questions in a Bolt file.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/pending"
)

func openTable(t *testing.T, b *pending.Bolt, name string) *pending.Table {
	t.Helper()
	table, err := b.Table(name)
	if err != nil {
		t.Fatalf("table %q: %v", name, err)
	}
	return table
}

func loadTable(t *testing.T, table *pending.Table) map[string]string {
	t.Helper()
	records, err := table.Load(t.Context())
	if err != nil {
		t.Fatalf("load table: %v", err)
	}
	out := make(map[string]string, len(records))
	for k, v := range records {
		out[k] = string(v)
	}
	return out
}

func wantTable(t *testing.T, table *pending.Table, want map[string]string) {
	t.Helper()
	if got := loadTable(t, table); !maps.Equal(got, want) {
		t.Errorf("table holds %v, want %v", got, want)
	}
}

func TestTableNeverWrittenIsEmpty(t *testing.T) {
	t.Parallel()
	b := openBolt(t, "", pending.BoltOptions{NoSync: true})
	records, err := openTable(t, b, "sessions").Load(t.Context())
	if err != nil || records == nil || len(records) != 0 {
		t.Errorf("load of a table never written = %v, %v; want an empty map", records, err)
	}
}

func TestTableRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := openBolt(t, "", pending.BoltOptions{NoSync: true})
	table := openTable(t, b, "sessions")
	for k, v := range map[string]string{"ses_a": `{"a":1}`, "ses_b": `{"b":2}`, "ses_c": `{"c":3}`} {
		if err := table.Put(ctx, k, []byte(v)); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	wantTable(t, table, map[string]string{"ses_a": `{"a":1}`, "ses_b": `{"b":2}`, "ses_c": `{"c":3}`})

	if err := table.Put(ctx, "ses_a", []byte(`{"a":"replaced"}`)); err != nil {
		t.Fatalf("replace: %v", err)
	}
	if err := table.Delete(ctx, "ses_b"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := table.Delete(ctx, "ses_never"); err != nil {
		t.Errorf("delete of a key that is not there: %v, want nil", err)
	}
	wantTable(t, table, map[string]string{"ses_a": `{"a":"replaced"}`, "ses_c": `{"c":3}`})

	// Load hands out copies, not views of the file's pages (which a
	// Load of a bucket too big to be stored inline would otherwise give):
	// changing them changes nothing stored.
	big := strings.Repeat("x", 8192)
	if err := table.Put(ctx, "ses_big", []byte(big)); err != nil {
		t.Fatalf("put: %v", err)
	}
	records, err := table.Load(ctx)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, v := range records {
		v[0] = 'X'
	}
	wantTable(t, table, map[string]string{"ses_a": `{"a":"replaced"}`, "ses_c": `{"c":3}`, "ses_big": big})
}

// Two tables of one file are separate, even under the same key.
func TestTablesAreSeparate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := openBolt(t, "", pending.BoltOptions{NoSync: true})
	one, two := openTable(t, b, "one"), openTable(t, b, "two")
	if err := one.Put(ctx, "k", []byte("1")); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := two.Put(ctx, "k", []byte("2")); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := two.Delete(ctx, "k"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantTable(t, one, map[string]string{"k": "1"})
	wantTable(t, two, map[string]string{})
	// A second handle on a name is the same table.
	wantTable(t, openTable(t, b, "one"), map[string]string{"k": "1"})
}

// A table survives a restart, and a file holding a table is still taken as
// questiond's own, with its questions intact.
func TestTableSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	b, err := pending.OpenBolt(path, pending.BoltOptions{NoSync: true})
	if err != nil {
		t.Fatalf("open bolt: %v", err)
	}
	q := endedQuestion("que_1")
	if err := b.Put(ctx, q); err != nil {
		t.Fatalf("put question: %v", err)
	}
	table := openTable(t, b, "sessions")
	if err := table.Put(ctx, "ses_a", []byte(`{"id":"ses_a"}`)); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := table.Put(ctx, "ses_b", []byte(`{"id":"ses_b"}`)); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := table.Delete(ctx, "ses_b"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	b = openBolt(t, path, pending.BoltOptions{NoSync: true})
	wantTable(t, openTable(t, b, "sessions"), map[string]string{"ses_a": `{"id":"ses_a"}`})
	got := loadAll(t, b)
	if len(got) != 1 || asJSON(t, got["que_1"]) != asJSON(t, q) {
		t.Errorf("questions after reopen = %v, want que_1 as stored", ids(mapValues(got)))
	}
}

func TestTableReservedNames(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "questions.db")
	b := openBolt(t, path, pending.BoltOptions{NoSync: true})
	for _, name := range []string{"", "questions", "meta"} {
		table, err := b.Table(name)
		if err == nil {
			t.Errorf("table %q = %v, want an error", name, table)
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) || !strings.Contains(err.Error(), path) {
			t.Errorf("table %q: err = %v, want it to name the table and %s", name, err, path)
		}
	}
}

// Table writes never touch the questions bucket, even under a question's id.
func TestTableLeavesQuestionsAlone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := openBolt(t, "", pending.BoltOptions{NoSync: true})
	stored := []*pending.Question{fullQuestion("que_1"), endedQuestion("que_2")}
	if err := b.Put(ctx, stored...); err != nil {
		t.Fatalf("put questions: %v", err)
	}
	table := openTable(t, b, "sessions")
	if err := table.Put(ctx, "que_1", []byte("not a question")); err != nil {
		t.Fatalf("table put: %v", err)
	}
	if err := table.Delete(ctx, "que_2"); err != nil {
		t.Fatalf("table delete: %v", err)
	}
	got := loadAll(t, b)
	if len(got) != len(stored) {
		t.Fatalf("questions = %v, want que_1 and que_2", ids(mapValues(got)))
	}
	for _, q := range stored {
		if asJSON(t, got[q.ID]) != asJSON(t, q) {
			t.Errorf("question %s = %s, want %s", q.ID, asJSON(t, got[q.ID]), asJSON(t, q))
		}
	}
	// And question writes leave the table alone.
	if err := b.Delete(ctx, "que_1"); err != nil {
		t.Fatalf("delete question: %v", err)
	}
	wantTable(t, table, map[string]string{"que_1": "not a question"})
}

// Table writes share the file's group commits with question writes, and a
// table write that fails (an empty key, which bbolt refuses) fails alone.
func TestTableWritesShareCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := openBolt(t, "", pending.BoltOptions{NoSync: true})
	table := openTable(t, b, "sessions")
	const writers = 16
	queued := make(chan struct{}, 2*writers+2)
	b.SetOnQueued(func() { queued <- struct{}{} })
	before := b.Commits()
	release := b.HoldWriter() // the first write leads, and waits for it

	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if err := table.Put(ctx, fmt.Sprintf("ses_%d", i), []byte("v")); err != nil {
				t.Errorf("table put: %v", err)
			}
		})
		wg.Go(func() {
			if err := b.Put(ctx, fullQuestion(fmt.Sprintf("que_%d", i))); err != nil {
				t.Errorf("question put: %v", err)
			}
		})
	}
	for range 2 * writers {
		<-queued
	}
	var badErr error
	wg.Go(func() { badErr = table.Put(ctx, "", []byte("v")) })
	<-queued
	release()
	wg.Wait()

	commits := b.Commits() - before
	t.Logf("%d writes queued behind one commit took %d commits", 2*writers+1, commits)
	if commits > 2 {
		t.Errorf("%d writes queued behind one commit took %d commits, want at most 2", 2*writers+1, commits)
	}
	if !errors.Is(badErr, pending.ErrUnavailable) || !strings.Contains(badErr.Error(), "sessions") {
		t.Errorf("table put with an empty key: err = %v, want ErrUnavailable naming the table", badErr)
	}
	if got := loadTable(t, table); len(got) != writers {
		t.Errorf("table holds %d records, want the %d good ones", len(got), writers)
	}
	if got := loadAll(t, b); len(got) != writers {
		t.Errorf("file holds %d questions, want %d", len(got), writers)
	}
}

func TestTableCancelledContext(t *testing.T) {
	t.Parallel()
	b := openBolt(t, "", pending.BoltOptions{NoSync: true})
	table := openTable(t, b, "sessions")
	if err := table.Put(t.Context(), "ses_a", []byte("kept")); err != nil {
		t.Fatalf("put: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := table.Put(ctx, "ses_b", []byte("v")); !errors.Is(err, context.Canceled) {
		t.Errorf("put with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if err := table.Delete(ctx, "ses_a"); !errors.Is(err, context.Canceled) {
		t.Errorf("delete with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if _, err := table.Load(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("load with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	wantTable(t, table, map[string]string{"ses_a": "kept"})
}

func TestTableAfterClose(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	b := openBolt(t, path, pending.BoltOptions{NoSync: true})
	table := openTable(t, b, "sessions")
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	calls := map[string]func() error{
		"load":   func() error { _, err := table.Load(ctx); return err },
		"put":    func() error { return table.Put(ctx, "ses_a", []byte("v")) },
		"delete": func() error { return table.Delete(ctx, "ses_a") },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, pending.ErrUnavailable) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s after close: err = %v, want ErrUnavailable naming %s", name, err, path)
		}
	}
}

func mapValues(m map[string]*pending.Question) []*pending.Question {
	out := make([]*pending.Question, 0, len(m))
	for _, q := range m {
		out = append(out, q)
	}
	return out
}
