package ask_test

import (
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// heard records what a listener heard, in order.
type heard struct {
	mu     sync.Mutex
	events []string // "asked que_…", "ended que_…"
}

func (h *heard) note(what, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, what+" "+id)
}

func (h *heard) Asked(q *pending.Question) { h.note("asked", q.ID) }
func (h *heard) Ended(q *pending.Question) { h.note("ended", q.ID) }

func (h *heard) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// newService is a service over store with an in-memory session registry,
// its announcements heard by a recorder (which hears endings only if the
// store's OnEnd is the announcements' Ended: see newStore).
func newService(t *testing.T, store ask.QuestionStore, opts ask.Options) *ask.Service {
	t.Helper()
	s, _ := newRecordedService(t, store, opts)
	return s
}

func newRecordedService(t *testing.T, store ask.QuestionStore, opts ask.Options) (*ask.Service, *heard) {
	t.Helper()
	listener := &heard{}
	return newServiceWith(t, store, ask.NewAnnouncements(nil, listener), opts), listener
}

func newServiceWith(t *testing.T, store ask.QuestionStore, announce *ask.Announcements, opts ask.Options) *ask.Service {
	t.Helper()
	sessions, err := session.Open(t.Context(), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ask.New(store, sessions, announce, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
