package session_test

// Records kept in a real question database: they survive a restart, and a
// table holding a record questiond cannot trust stops Open.

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// openDatabase opens the bolt file at path and its "sessions" table; the
// file is closed when the test ends unless the test closes it first.
func openDatabase(t *testing.T, path string) (*pending.Bolt, *pending.Table) {
	t.Helper()
	b, err := pending.OpenBolt(path, pending.BoltOptions{NoSync: true})
	if err != nil {
		t.Fatalf("open bolt: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	table, err := b.Table("sessions")
	if err != nil {
		t.Fatalf("table: %v", err)
	}
	return b, table
}

func TestRecordsSurviveRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "questions.db")
	b, table := openDatabase(t, path)
	r := openRegistry(t, session.Options{Journal: table})
	want := map[string]session.Session{}
	for _, put := range []struct {
		s     session.Session
		agent string
	}{
		{session.Session{ID: "ses_none", Capability: session.None}, "agent-1"},
		{session.Session{ID: "ses_child", Capability: session.Parent, ParentID: "ses_parent"}, "agent-2"},
		{session.Session{ID: "ses_user", Capability: session.User}, ""},
		{session.Session{ID: "ses_gone", Capability: session.None}, "agent-1"},
		{session.Session{ID: "ses_changed", Capability: session.User}, "agent-1"},
		{session.Session{ID: "ses_changed", Capability: session.None}, "agent-1"},
	} {
		want[put.s.ID] = mustPut(t, r, put.s, put.agent)
	}
	if _, err := r.Delete(ctx, "ses_gone", "agent-1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	delete(want, "ses_gone")
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	_, table = openDatabase(t, path)
	r = openRegistry(t, session.Options{Journal: table, Default: session.User})
	for id, stored := range want {
		got := mustGet(t, r, id)
		if got != stored || !got.UpdatedAt.Equal(stored.UpdatedAt) {
			t.Errorf("%s after restart = %+v, want %+v", id, got, stored)
		}
	}
	if got := mustGet(t, r, "ses_gone"); got != (session.Session{ID: "ses_gone", Capability: session.User}) {
		t.Errorf("deleted session after restart = %+v, want the default", got)
	}
	// The owner survives too: another agent still may not change a record.
	if _, _, err := r.Put(ctx, session.Session{ID: "ses_none", Capability: session.User}, "agent-2"); !errors.Is(err, session.ErrForbidden) {
		t.Errorf("another agent replacing a restored record: err = %v, want ErrForbidden", err)
	}
	if _, err := r.Delete(ctx, "ses_child", "agent-2"); err != nil {
		t.Errorf("the owner could not delete a restored record: %v", err)
	}
}

// A record Open cannot trust stops it, naming the record's key, rather than
// being skipped: a skipped "none" would silently become the default.
func TestOpenRefusesBadRecords(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":        `{"id":`,
		"wrong id":        `{"id":"ses_other","questionCapability":"none"}`,
		"no id":           `{"questionCapability":"none"}`,
		"bad capability":  `{"id":"ses_bad","questionCapability":"admin"}`,
		"parent no id":    `{"id":"ses_bad","questionCapability":"parent"}`,
		"capability type": `{"id":"ses_bad","questionCapability":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			_, table := openDatabase(t, filepath.Join(t.TempDir(), "questions.db"))
			if err := table.Put(ctx, "ses_good", []byte(`{"id":"ses_good","questionCapability":"none"}`)); err != nil {
				t.Fatalf("put: %v", err)
			}
			if err := table.Put(ctx, "ses_bad", []byte(raw)); err != nil {
				t.Fatalf("put: %v", err)
			}
			r, err := session.Open(ctx, session.Options{Journal: table})
			if err == nil || r != nil {
				t.Fatalf("Open = %v, %v; want an error", r, err)
			}
			if !strings.Contains(err.Error(), `"ses_bad"`) {
				t.Errorf("Open: %v; want it to name the record ses_bad", err)
			}
			t.Log(err)
		})
	}
}

// Earlier versions stored the parent a "user" session named; it never did
// anything. Such a record still opens, as the user session it is.
func TestOpenDropsTheParentOfAnOldUserRecord(t *testing.T) {
	ctx := t.Context()
	_, table := openDatabase(t, filepath.Join(t.TempDir(), "questions.db"))
	if err := table.Put(ctx, "ses_old", []byte(`{"id":"ses_old","questionCapability":"user","parentSessionID":"ses_p","setBy":"agent-1"}`)); err != nil {
		t.Fatalf("put: %v", err)
	}
	r := openRegistry(t, session.Options{Journal: table})
	got := mustGet(t, r, "ses_old")
	if got.Capability != session.User || got.ParentID != "" || got.SetBy != "agent-1" || !got.Configured {
		t.Fatalf("old record opened as %+v", got)
	}
}
