package httpapi

import (
	"sync"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// RepeatEnding publishes again how q ended, for a client that still shows
// it as pending (see ask.Service.RepeatEnding). The events are the ones
// Ended published: question.replied with the answers when the operator
// answered, question.rejected for every other ending.
//
// Only the TUI's streams get it: every other client hears of an ending once.
func (e *Events) RepeatEnding(q *pending.Question) {
	if q.Ended == nil {
		return
	}
	if c := e.console.Load(); c != nil {
		c.RepeatEnding(q)
	} else if e.overlay.Load() {
		e.publishEnding(q, sse.Console)
	}
}

var _ ask.EndingRepeater = (*Events)(nil)

// RepeatForgotten is RepeatEnding for a question the store no longer
// has, in front of an OpenCode server: the TUI keeps a question's panel
// until it hears the question ended, whatever answer its reply gets, so a
// TUI that missed the ending of one since forgotten is told it was
// rejected, if questiond still knows the session it was shown in.
func (e *Events) RepeatForgotten(id string) {
	if !e.overlay.Load() {
		return
	}
	if q, ok := e.shown.find(id); ok {
		e.publishEnding(q, sse.Console) // not ended: question.rejected
	}
}

// shownInSessions remembers, in front of an OpenCode server, where each of
// questiond's questions the TUI may have shown (those filed in the
// server's sessions) was announced, beyond the store's retention (see
// RepeatForgotten). It keeps the last maxShownInSessions, as small
// records; one agent asking many questions makes older ones forgotten
// sooner, which costs only the TUI's clean-up of a panel it should have
// closed long before.
type shownInSessions struct {
	mu    sync.Mutex
	where map[string]*pending.Question // id → a record holding its id, session and directory only
	ring  []string                     // ids, in the order remembered; next is the oldest
	next  int
}

const maxShownInSessions = 4096

// remember keeps where q is shown, if the TUI can show it.
func (s *shownInSessions) remember(q *pending.Question) {
	if !q.Hosted {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.where[q.ID]; ok {
		return
	}
	if s.where == nil {
		s.where = make(map[string]*pending.Question)
		s.ring = make([]string, maxShownInSessions)
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.where, old)
	}
	s.ring[s.next] = q.ID
	s.next = (s.next + 1) % maxShownInSessions
	s.where[q.ID] = &pending.Question{ID: q.ID, SessionID: q.SessionID, Directory: q.Directory}
}

// find returns the record remember kept for id.
func (s *shownInSessions) find(id string) (*pending.Question, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.where[id]
	return q, ok
}
