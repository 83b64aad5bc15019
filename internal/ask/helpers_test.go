package ask_test

import (
	"context"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// announcements records what the service announced, in order.
type announcements struct {
	mu     sync.Mutex
	events []string // "begin que_…", "asked que_…", "finish que_…"
}

func (a *announcements) note(what, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, what+" "+id)
}

func (a *announcements) BeginAnnounce(id string)                      { a.note("begin", id) }
func (a *announcements) FinishAnnounce(id string)                     { a.note("finish", id) }
func (a *announcements) Asked(_ context.Context, q *pending.Question) { a.note("asked", q.ID) }

func (a *announcements) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.events...)
}

// newService is a service over store with an in-memory session registry,
// announcing to a recorder.
func newService(t *testing.T, store ask.Store, opts ask.Options) *ask.Service {
	t.Helper()
	s, _ := newRecordedService(t, store, opts)
	return s
}

func newRecordedService(t *testing.T, store ask.Store, opts ask.Options) (*ask.Service, *announcements) {
	t.Helper()
	sessions, err := session.Open(t.Context(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	announced := &announcements{}
	s, err := ask.New(store, sessions, announced, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, announced
}
