package session_test

// Concurrent callers, run with -race: changes are serialised, so memory and
// journal agree, ownership is never lost, and limits hold exactly.

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/questiond/questiond/internal/session"
)

// journals are the backings the concurrency tests run on.
var journals = map[string]func(t *testing.T) session.Journal{
	"memory": func(*testing.T) session.Journal { return nil },
	"fake":   func(*testing.T) session.Journal { return newFakeJournal() },
	"bolt": func(t *testing.T) session.Journal {
		_, table := openDatabase(t, filepath.Join(t.TempDir(), "questions.db"))
		return table
	},
}

// Each goroutine works on its own session: every call succeeds and sees
// its own writes.
func TestConcurrentOwnSessions(t *testing.T) {
	for name, journal := range journals {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			r := openRegistry(t, session.Options{Journal: journal(t), MaxSessions: 64})
			var wg sync.WaitGroup
			for g := range 32 {
				wg.Go(func() {
					id, agent := fmt.Sprintf("ses_%d", g), fmt.Sprintf("agent-%d", g)
					for range 10 {
						first, created, err := r.Put(ctx, session.Session{ID: id, Capability: session.None}, agent)
						if err != nil || !created {
							t.Errorf("%s: put = created %v, %v; want created", id, created, err)
							return
						}
						second, created, err := r.Put(ctx, session.Session{ID: id, Capability: session.Parent, ParentID: fmt.Sprintf("ses_p%d", g)}, agent)
						if err != nil || created || second.Capability != session.Parent {
							t.Errorf("%s: replace = %+v, created %v, %v", id, second, created, err)
							return
						}
						if got, err := r.Get(ctx, id); err != nil || got != second {
							t.Errorf("%s: get = %+v, %v; want %+v (first was %+v)", id, got, err, second, first)
						}
						if got, err := r.Delete(ctx, id, agent); err != nil || got != second {
							t.Errorf("%s: delete = %+v, %v; want %+v", id, got, err, second)
						}
						if got, err := r.Get(ctx, id); err != nil || got.Configured {
							t.Errorf("%s: get after delete = %+v, %v; want the default", id, got, err)
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// Agents fight over a few sessions. Whatever the interleaving, a session
// is created once per delete, only its owner deletes it, and the journal
// ends holding exactly what memory holds.
func TestConcurrentSharedSessions(t *testing.T) {
	for name, journal := range journals {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			j := journal(t)
			r := openRegistry(t, session.Options{Journal: j})
			const sessions, agents, rounds = 4, 8, 40
			var live [sessions]atomic.Int64 // creates minus deletes
			var wg sync.WaitGroup
			for a := range agents {
				wg.Go(func() {
					agent := fmt.Sprintf("agent-%d", a)
					for i := range rounds {
						n := (a + i) % sessions
						id := fmt.Sprintf("ses_%d", n)
						capability := []session.Capability{session.User, session.None}[i%2]
						stored, created, err := r.Put(ctx, session.Session{ID: id, Capability: capability}, agent)
						switch {
						case errors.Is(err, session.ErrForbidden):
						case err != nil:
							t.Errorf("put: %v", err)
						case stored.SetBy != agent || stored.Capability != capability:
							t.Errorf("put by %s stored %+v", agent, stored)
						case created:
							live[n].Add(1)
						}
						if got, err := r.Get(ctx, id); err != nil || (got.Configured && got.SetBy == "") {
							t.Errorf("get = %+v, %v", got, err)
						}
						if i%3 == 0 {
							continue // leave some records for the end
						}
						old, err := r.Delete(ctx, id, agent)
						switch {
						case errors.Is(err, session.ErrForbidden), errors.Is(err, session.ErrNotFound):
						case err != nil:
							t.Errorf("delete: %v", err)
						case old.SetBy != agent:
							t.Errorf("%s deleted a record set by %q", agent, old.SetBy)
						default:
							live[n].Add(-1)
						}
					}
				})
			}
			wg.Wait()

			var reopened *session.Registry
			if j != nil {
				reopened = openRegistry(t, session.Options{Journal: j})
			}
			for n := range sessions {
				id := fmt.Sprintf("ses_%d", n)
				got := mustGet(t, r, id)
				want := int64(0)
				if got.Configured {
					want = 1
				}
				if live[n].Load() != want {
					t.Errorf("%s: %d creates more than deletes, but configured is %v", id, live[n].Load(), got.Configured)
				}
				if reopened != nil {
					if fromJournal := mustGet(t, reopened, id); fromJournal != got {
						t.Errorf("%s: journal holds %+v, memory %+v", id, fromJournal, got)
					}
				}
			}
		})
	}
}

// Two agents claim the same new session while the first one's journal write
// is in progress: the first wins and the second is forbidden, never both
// "created".
func TestConcurrentClaimOfOneSession(t *testing.T) {
	ctx := t.Context()
	for round := range 20 {
		j := newFakeJournal()
		r := openRegistry(t, session.Options{Journal: j})
		id := fmt.Sprintf("ses_%d", round)
		release := j.parkPut(id)
		var wg sync.WaitGroup
		var firstErr, secondErr error
		var firstCreated bool
		wg.Go(func() {
			_, firstCreated, firstErr = r.Put(ctx, session.Session{ID: id, Capability: session.None}, "agent-1")
		})
		<-j.parked // agent-1 is writing its record
		started := make(chan struct{})
		wg.Go(func() {
			close(started)
			_, _, secondErr = r.Put(ctx, session.Session{ID: id, Capability: session.User}, "agent-2")
		})
		<-started
		release()
		wg.Wait()
		if firstErr != nil || !firstCreated {
			t.Fatalf("first claim: created %v, %v; want created", firstCreated, firstErr)
		}
		if !errors.Is(secondErr, session.ErrForbidden) {
			t.Fatalf("second claim: err = %v, want ErrForbidden", secondErr)
		}
		if got := mustGet(t, r, id); got.SetBy != "agent-1" || got.Capability != session.None {
			t.Fatalf("after both claims: %+v, want agent-1's none", got)
		}
	}
}

// MaxSessions holds exactly under concurrent creates.
func TestConcurrentMaxSessions(t *testing.T) {
	for name, journal := range journals {
		t.Run(name, func(t *testing.T) {
			const limit, callers = 10, 64
			r := openRegistry(t, session.Options{Journal: journal(t), MaxSessions: limit})
			var stored, full atomic.Int64
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					_, _, err := r.Put(t.Context(), session.Session{ID: fmt.Sprintf("ses_%d", i), Capability: session.None}, "a")
					switch {
					case err == nil:
						stored.Add(1)
					case errors.Is(err, session.ErrFull):
						full.Add(1)
					default:
						t.Errorf("put: %v", err)
					}
				})
			}
			wg.Wait()
			if stored.Load() != limit || full.Load() != callers-limit {
				t.Errorf("%d stored and %d full, want %d and %d", stored.Load(), full.Load(), limit, callers-limit)
			}
		})
	}
}
