package pending

import (
	"cmp"
	"slices"
	"time"
)

// sessionSet is the entries of one session.
type sessionSet map[*entry]struct{}

// track makes e findable by id, by Idempotency-Key and by session. Callers
// hold mu for writing.
func (m *Memory) track(e *entry) {
	m.entries[e.q.ID] = e
	m.indexKey(e)
	set := m.sessions[e.q.SessionID]
	if set == nil {
		set = sessionSet{}
		m.sessions[e.q.SessionID] = set
	}
	set[e] = struct{}{}
}

// forgetSession drops e from its session's entries, and the session with
// its last one. Callers hold mu for writing.
func (m *Memory) forgetSession(e *entry) {
	set := m.sessions[e.q.SessionID]
	delete(set, e)
	if len(set) == 0 {
		delete(m.sessions, e.q.SessionID)
	}
}

// listPending appends e to the pending list. Callers hold mu for writing.
func (m *Memory) listPending(e *entry) {
	m.seq++
	e.listedAt = m.seq
	e.elem = m.pending.PushBack(e)
}

// listEnded appends e to the ended queue. Callers hold mu for writing.
func (m *Memory) listEnded(e *entry) {
	m.seq++
	e.endedAt = m.seq
	m.ended = append(m.ended, e)
}

// listSession is List for a filter with a SessionID: the same answer, in the
// same order, from the session's own entries, so that it costs what the
// session holds rather than what the store holds. Callers hold mu.
func (m *Memory) listSession(f Filter) []*Question {
	var waiting, ended []*entry
	now := time.Now()
	for e := range m.sessions[f.SessionID] {
		switch {
		case !f.Matches(e.q):
		case e.elem != nil:
			waiting = append(waiting, e)
		case f.Ended && e.endedAt != 0 && !e.expired(now):
			ended = append(ended, e)
		}
	}
	slices.SortFunc(waiting, func(a, b *entry) int { return cmp.Compare(a.listedAt, b.listedAt) })
	slices.SortFunc(ended, func(a, b *entry) int { return cmp.Compare(a.endedAt, b.endedAt) })
	list := make([]*Question, 0, len(waiting)+len(ended))
	for _, e := range waiting {
		q := *e.q // pending records never change
		list = append(list, &q)
	}
	for _, e := range ended {
		e.mu.Lock()
		list = append(list, e.snapshot())
		e.mu.Unlock()
	}
	return list
}
