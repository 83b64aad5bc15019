package pending

import (
	"cmp"
	"slices"
	"time"
)

// sessionEntries is the entries of one session, apart by state, so that
// listing what a session has pending costs what it has pending, however many
// results it retains.
type sessionEntries struct {
	pending map[*entry]struct{}
	ended   map[*entry]struct{} // ended, retained or not yet forgotten
}

// track makes e findable by id, by Idempotency-Key and by session. Callers
// hold mu for writing.
func (m *Store) track(e *entry) {
	if e.charged == 0 {
		m.charge(e) // Create admitted and charged it already; others count as they come
	}
	m.entries[e.q.ID] = e
	m.indexKey(e)
	se := m.sessions[e.q.SessionID]
	if se == nil {
		se = &sessionEntries{pending: map[*entry]struct{}{}, ended: map[*entry]struct{}{}}
		m.sessions[e.q.SessionID] = se
	}
	if e.elem != nil {
		se.pending[e] = struct{}{}
	} else {
		se.ended[e] = struct{}{}
	}
}

// sessionEnded moves e, which just ended, to its session's ended entries.
// Callers hold mu for writing.
func (m *Store) sessionEnded(e *entry) {
	if se := m.sessions[e.q.SessionID]; se != nil {
		if _, ok := se.pending[e]; ok {
			delete(se.pending, e)
			se.ended[e] = struct{}{}
		}
	}
}

// forgetSession drops e from its session's entries, and the session with
// its last one. Callers hold mu for writing.
func (m *Store) forgetSession(e *entry) {
	se := m.sessions[e.q.SessionID]
	if se == nil {
		return
	}
	delete(se.pending, e)
	delete(se.ended, e)
	if len(se.pending) == 0 && len(se.ended) == 0 {
		delete(m.sessions, e.q.SessionID)
	}
}

// listPending appends e to the pending list. Callers hold mu for writing.
func (m *Store) listPending(e *entry) {
	m.seq++
	e.listedAt = m.seq
	e.elem = m.pending.PushBack(e)
	m.pendingVersion.Add(1)
}

// listEnded appends e to the ended queue. Callers hold mu for writing.
func (m *Store) listEnded(e *entry) {
	m.seq++
	e.endedAt = m.seq
	m.ended.push(e)
}

// listSession is List for a filter with a SessionID: the same answer, in the
// same order, from the session's own entries, so that it costs what the
// session holds rather than what the store holds (and, without f.Ended, what
// it has pending). Callers hold mu.
func (m *Store) listSession(f Filter) []*Question {
	se := m.sessions[f.SessionID]
	if se == nil {
		return []*Question{}
	}
	var waiting, ended []*entry
	for e := range se.pending {
		if f.Matches(e.q) {
			waiting = append(waiting, e)
		}
	}
	if f.Ended {
		now := time.Now()
		for e := range se.ended {
			if e.endedAt != 0 && !e.expired(now) && f.Matches(e.q) {
				ended = append(ended, e)
			}
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
