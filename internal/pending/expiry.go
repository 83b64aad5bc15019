package pending

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"
)

// janitor forgets ended questions past retention, so the map (and the
// journal) does not grow with every question ever asked. Get and Wait already hide expired entries,
// so sweeping once per retention period is enough: an entry lingers in memory
// for at most twice the retention.
func (m *Memory) janitor() {
	defer close(m.janitorDone)
	ticker := time.NewTicker(m.retention)
	defer ticker.Stop()
	for {
		select {
		case <-m.closing:
			return
		case <-ticker.C:
			m.sweep(time.Now())
		}
	}
}

// sweep drops the expired prefix of the expiry queue. Entries join the
// queue with a deadline of now+retention under the write lock, so the queue
// is ordered by expiry. With a journal, the records go first, in one Delete;
// if it fails, the entries stay (hidden, since they are expired) and the
// next sweep tries again.
func (m *Memory) sweep(now time.Time) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	n := 0
	for n < len(m.ended) && m.ended[n].expired(now) {
		n++
	}
	expired := slices.Clone(m.ended[:n])
	clear(m.ended[:n]) // the array outlives the slice; let the entries go
	m.ended = m.ended[n:]
	if m.journal == nil || n == 0 {
		for _, e := range expired {
			m.forget(e)
		}
		m.mu.Unlock()
		return
	}

	var doomed, kept []*entry
	var ids []string
	for _, e := range expired {
		id := e.q.ID
		_, creating := m.creating[id]
		switch {
		case m.entries[id] != e:
			// A newer question took the id; its record replaced this one.
		case creating:
			// A newer question is committing under this id; if that fails,
			// this record is still there to delete next time.
			kept = append(kept, e)
		default:
			e.sweeping = true
			doomed = append(doomed, e)
			ids = append(ids, id)
		}
	}
	swept := make(chan struct{})
	m.sweepDone = swept
	m.mu.Unlock()

	var err error
	if len(ids) > 0 {
		err = m.journal.Delete(context.Background(), ids...)
	}

	m.mu.Lock()
	for _, e := range doomed {
		e.sweeping = false
		if err == nil {
			m.forget(e)
		}
	}
	if err != nil {
		m.log.Warn("expired questions not deleted; retrying at the next sweep", zap.Int("questions", len(ids)), zap.Error(err))
		kept = append(kept, doomed...)
	}
	if len(kept) > 0 {
		// Expired, so they belong at the front of the queue.
		m.ended = append(kept, m.ended...)
	}
	m.sweepDone = nil
	close(swept)
	m.mu.Unlock()
}

// forget removes an ended entry from the map, by identity: the id may
// already belong to a newer question. Callers hold mu for writing.
func (m *Memory) forget(e *entry) {
	if m.entries[e.q.ID] == e {
		delete(m.entries, e.q.ID)
	}
	m.forgetKey(e)
}
