package session_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/session"
)

func openRegistry(t *testing.T, opts session.Options) *session.Registry {
	t.Helper()
	r, err := session.Open(t.Context(), opts)
	if err != nil {
		t.Fatalf("open registry: %v", err)
	}
	return r
}

func mustGet(t *testing.T, r *session.Registry, id string) session.Session {
	t.Helper()
	s, err := r.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return s
}

func mustPut(t *testing.T, r *session.Registry, s session.Session, agent string) session.Session {
	t.Helper()
	stored, _, err := r.Put(t.Context(), s, agent)
	if err != nil {
		t.Fatalf("put %+v as %q: %v", s, agent, err)
	}
	return stored
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}

func TestGetUnknownGivesDefault(t *testing.T) {
	for _, tc := range []struct {
		configured session.Capability
		want       session.Capability
	}{{"", session.User}, {session.User, session.User}, {session.None, session.None}} {
		r := openRegistry(t, session.Options{Default: tc.configured})
		if r.Default() != tc.want {
			t.Errorf("default %q: Default() = %q, want %q", tc.configured, r.Default(), tc.want)
		}
		got := mustGet(t, r, "ses_unknown")
		want := session.Session{ID: "ses_unknown", Capability: tc.want}
		if got != want {
			t.Errorf("default %q: Get of an unknown session = %+v, want %+v", tc.configured, got, want)
		}
	}
}

func TestOpenRefusesDefaults(t *testing.T) {
	for _, c := range []session.Capability{session.Parent, "admin", "User"} {
		r, err := session.Open(t.Context(), session.Options{Default: c})
		if err == nil || !strings.Contains(err.Error(), string(c)) {
			t.Errorf("Open with default %q = %v, %v; want an error naming it", c, r, err)
		}
	}
}

func TestOpenFailsWhenJournalFails(t *testing.T) {
	j := newFakeJournal()
	j.loadErr = errJournal
	if r, err := session.Open(t.Context(), session.Options{Journal: j}); !errors.Is(err, errJournal) {
		t.Errorf("Open on a failing journal = %v, %v; want an error wrapping the journal's", r, err)
	}
}

func TestGetWithCancelledContext(t *testing.T) {
	r := openRegistry(t, session.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Get(ctx, "ses_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled ctx: err = %v, want context.Canceled", err)
	}
}

func TestPutCreatesThenReplaces(t *testing.T) {
	ctx := t.Context()
	r := openRegistry(t, session.Options{})
	start := time.Now().Add(-time.Millisecond)
	// Whatever the caller claims for SetBy, UpdatedAt or Configured is
	// replaced by the registry's own.
	in := session.Session{ID: "ses_child", Capability: session.Parent, ParentID: "ses_parent", SetBy: "someone-else", UpdatedAt: time.Unix(1, 0)}
	stored, created, err := r.Put(ctx, in, "agent-1")
	if err != nil || !created {
		t.Fatalf("first put = %+v, created %v, %v; want created", stored, created, err)
	}
	want := session.Session{ID: "ses_child", Capability: session.Parent, ParentID: "ses_parent", SetBy: "agent-1", Configured: true, UpdatedAt: stored.UpdatedAt}
	if stored != want || stored.UpdatedAt.Before(start) || stored.UpdatedAt.After(time.Now().Add(time.Millisecond)) {
		t.Errorf("first put stored %+v, want %+v updated now", stored, want)
	}
	if got := mustGet(t, r, "ses_child"); got != stored {
		t.Errorf("get after put = %+v, want %+v", got, stored)
	}

	replaced, created, err := r.Put(ctx, session.Session{ID: "ses_child", Capability: session.None}, "agent-1")
	if err != nil || created {
		t.Fatalf("second put = %+v, created %v, %v; want replaced", replaced, created, err)
	}
	if replaced.Capability != session.None || replaced.ParentID != "" || replaced.SetBy != "agent-1" || !replaced.Configured {
		t.Errorf("second put stored %+v", replaced)
	}
	if got := mustGet(t, r, "ses_child"); got != replaced {
		t.Errorf("get after replace = %+v, want %+v", got, replaced)
	}
}

func TestPutRefusesInvalidSessions(t *testing.T) {
	r := openRegistry(t, session.Options{})
	for _, s := range []session.Session{
		{ID: "bad", Capability: session.User},
		{ID: "ses_1", Capability: "admin"},
		{ID: "ses_1", Capability: session.Parent},
		{ID: "ses_1", Capability: session.None, ParentID: "ses_2"},
		{ID: "ses_1", Capability: session.Parent, ParentID: "ses_1"},
	} {
		var fe *session.FieldError
		if _, _, err := r.Put(t.Context(), s, "agent-1"); !errors.As(err, &fe) {
			t.Errorf("put %+v: err = %v, want a *FieldError", s, err)
		}
	}
	if got := mustGet(t, r, "ses_1"); got.Configured {
		t.Errorf("a refused put stored %+v", got)
	}
}

func TestAnotherAgentIsForbidden(t *testing.T) {
	ctx := t.Context()
	r := openRegistry(t, session.Options{})
	stored := mustPut(t, r, session.Session{ID: "ses_1", Capability: session.None}, "agent-1")
	for _, agent := range []string{"agent-2", ""} {
		if got, created, err := r.Put(ctx, session.Session{ID: "ses_1", Capability: session.User}, agent); !errors.Is(err, session.ErrForbidden) || created || got != (session.Session{}) {
			t.Errorf("put by %q = %+v, %v, %v; want ErrForbidden", agent, got, created, err)
		}
		if got, err := r.Delete(ctx, "ses_1", agent); !errors.Is(err, session.ErrForbidden) || got != (session.Session{}) {
			t.Errorf("delete by %q = %+v, %v; want ErrForbidden", agent, got, err)
		}
	}
	if got := mustGet(t, r, "ses_1"); got != stored {
		t.Errorf("after refused changes get = %+v, want %+v unchanged", got, stored)
	}

	// Without agent tokens every caller is "", and they may change each
	// other's records.
	mustPut(t, r, session.Session{ID: "ses_open", Capability: session.None}, "")
	mustPut(t, r, session.Session{ID: "ses_open", Capability: session.User}, "")
	if _, err := r.Delete(ctx, "ses_open", ""); err != nil {
		t.Errorf("delete of a record set without tokens: %v", err)
	}
}

func TestDelete(t *testing.T) {
	ctx := t.Context()
	r := openRegistry(t, session.Options{Default: session.None})
	if got, err := r.Delete(ctx, "ses_1", "agent-1"); !errors.Is(err, session.ErrNotFound) || got != (session.Session{}) {
		t.Errorf("delete of an unknown session = %+v, %v; want ErrNotFound", got, err)
	}
	stored := mustPut(t, r, session.Session{ID: "ses_1", Capability: session.User}, "agent-1")
	got, err := r.Delete(ctx, "ses_1", "agent-1")
	if err != nil || got != stored {
		t.Errorf("delete = %+v, %v; want the record as it was, %+v", got, err, stored)
	}
	if got := mustGet(t, r, "ses_1"); got != (session.Session{ID: "ses_1", Capability: session.None}) {
		t.Errorf("get after delete = %+v, want the default", got)
	}
	if _, err := r.Delete(ctx, "ses_1", "agent-1"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("second delete: err = %v, want ErrNotFound", err)
	}
	// Once deleted, anyone may claim the session.
	if _, created, err := r.Put(ctx, session.Session{ID: "ses_1", Capability: session.None}, "agent-2"); err != nil || !created {
		t.Errorf("put by another agent after delete: created %v, %v; want created", created, err)
	}
}

func TestMaxSessions(t *testing.T) {
	ctx := t.Context()
	r := openRegistry(t, session.Options{MaxSessions: 2})
	mustPut(t, r, session.Session{ID: "ses_1", Capability: session.User}, "a")
	mustPut(t, r, session.Session{ID: "ses_2", Capability: session.User}, "a")
	if got, created, err := r.Put(ctx, session.Session{ID: "ses_3", Capability: session.None}, "a"); !errors.Is(err, session.ErrFull) || created || !strings.Contains(err.Error(), "2") {
		t.Errorf("third put = %+v, %v, %v; want ErrFull naming the limit", got, created, err)
	}
	if got := mustGet(t, r, "ses_3"); got.Configured {
		t.Errorf("a put refused as full stored %+v", got)
	}
	// Replacing a record needs no room.
	if got, created, err := r.Put(ctx, session.Session{ID: "ses_2", Capability: session.None}, "a"); err != nil || created || got.Capability != session.None {
		t.Errorf("replace while full = %+v, created %v, %v; want replaced", got, created, err)
	}
	// A refused replace by another agent is forbidden, not full.
	if _, _, err := r.Put(ctx, session.Session{ID: "ses_2", Capability: session.User}, "b"); !errors.Is(err, session.ErrForbidden) {
		t.Errorf("replace by another agent while full: err = %v, want ErrForbidden", err)
	}
	if _, err := r.Delete(ctx, "ses_1", "a"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, created, err := r.Put(ctx, session.Session{ID: "ses_3", Capability: session.None}, "a"); err != nil || !created {
		t.Errorf("put after a delete made room: created %v, %v", created, err)
	}
}

// A change the journal does not take is not made: memory keeps what the
// journal holds.
func TestFailingJournalChangesNothing(t *testing.T) {
	ctx := t.Context()
	j := newFakeJournal()
	r := openRegistry(t, session.Options{Journal: j})
	kept := mustPut(t, r, session.Session{ID: "ses_kept", Capability: session.None}, "agent-1")
	j.setFailing(true)

	calls := map[string]func() error{
		"create": func() error {
			_, _, err := r.Put(ctx, session.Session{ID: "ses_new", Capability: session.None}, "agent-1")
			return err
		},
		"replace": func() error {
			_, _, err := r.Put(ctx, session.Session{ID: "ses_kept", Capability: session.User}, "agent-1")
			return err
		},
		"delete": func() error { _, err := r.Delete(ctx, "ses_kept", "agent-1"); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, session.ErrUnavailable) || !errors.Is(err, errJournal) {
			t.Errorf("%s on a failing journal: err = %v, want ErrUnavailable wrapping the journal's error", name, err)
		}
	}
	if got := mustGet(t, r, "ses_kept"); got != kept {
		t.Errorf("ses_kept = %+v, want %+v unchanged", got, kept)
	}
	if got := mustGet(t, r, "ses_new"); got.Configured {
		t.Errorf("ses_new = %+v, want the default", got)
	}
	if keys := j.keys(); !slices.Equal(keys, []string{"ses_kept"}) {
		t.Errorf("journal holds %v", keys)
	}

	// Once the journal recovers, the same changes go through.
	j.setFailing(false)
	for _, name := range []string{"create", "replace", "delete"} {
		if err := calls[name](); err != nil {
			t.Errorf("%s after the journal recovered: %v", name, err)
		}
	}
	if keys := j.keys(); !slices.Equal(keys, []string{"ses_new"}) {
		t.Errorf("journal holds %v, want [ses_new]", keys)
	}
}

// A session may not ask through a parent that may ask nobody: its questions
// would be listed where nobody answers them.
func TestPutRefusesAParentOnNone(t *testing.T) {
	ctx := t.Context()
	child := session.Session{ID: "ses_child", Capability: session.Parent, ParentID: "ses_parent"}
	for name, tc := range map[string]struct {
		def    session.Capability
		parent *session.Session // configured before the child, if any
		ok     bool
	}{
		"configured none":       {session.User, &session.Session{ID: "ses_parent", Capability: session.None}, false},
		"none by default":       {session.None, nil, false},
		"configured user":       {session.None, &session.Session{ID: "ses_parent", Capability: session.User}, true},
		"user by default":       {session.User, nil, true},
		"itself asking through": {session.None, &session.Session{ID: "ses_parent", Capability: session.Parent, ParentID: "ses_root"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			r := openRegistry(t, session.Options{Default: tc.def})
			if tc.parent != nil {
				if tc.parent.Capability == session.Parent {
					mustPut(t, r, session.Session{ID: "ses_root", Capability: session.User}, "agent-1")
				}
				mustPut(t, r, *tc.parent, "agent-1")
			}
			_, _, err := r.Put(ctx, child, "agent-1") // a parent of its own: see owner_test.go
			var fe *session.FieldError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("put: %v", err)
			case !tc.ok && (!errors.As(err, &fe) || fe.Field != "parentSessionID" || !strings.Contains(fe.Problem, `"none"`)):
				t.Fatalf("put = %v; want a parentSessionID error naming none", err)
			case !tc.ok && mustGet(t, r, "ses_child").Configured:
				t.Fatal("the refused record was stored")
			}
		})
	}
}
