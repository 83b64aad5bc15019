package pending

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Evicted records are deleted in batches: one agent at the per-agent
// bound evicts on every ending, and a commit per eviction (with its own
// sync on bolt) cost 6.7 % of the server's CPU. The janitor deletes them
// evictionDelay after the first eviction of a batch, or at once when the
// batch reaches evictionBatch entries or evictionBatchBytes of charged
// weight, so that what evicted entries keep in memory stays small. Until
// then they are hidden exactly as when deleted.
const (
	evictionDelay      = 100 * time.Millisecond
	evictionBatch      = 256
	evictionBatchBytes = 1 << 20
)

// janitor forgets ended questions past retention, so the map (and the
// journal) does not grow with every question ever asked. Get and Wait
// already hide expired entries, so sweeping once per retention period is
// enough: an entry lingers in memory for at most twice the retention. With a
// journal it also deletes the records of questions evicted by the retention
// bounds and the byte budgets, in batches (see evictionDelay).
func (m *Store) janitor() {
	defer close(m.janitorDone)
	ticker := time.NewTicker(m.retention)
	defer ticker.Stop()
	batch := time.NewTimer(evictionDelay)
	batch.Stop()
	defer batch.Stop()
	for {
		select {
		case <-m.closing:
			return
		case <-ticker.C:
			m.sweep(time.Now())
		case <-m.sweepSoon:
			batch.Stop()
			m.sweep(time.Now())
		case <-m.sweepLater:
			batch.Reset(evictionDelay)
		case <-batch.C:
			m.sweep(time.Now())
		}
	}
}

// retain queues the freshly ended e for expiry and evicts results beyond
// the bounds: an agent beyond maxRetainedPerAgent forgets its own oldest
// result, and beyond maxRetained the agent holding the most results does
// (see retainedQueue.victim), so one agent's churn never evicts another's
// result first. Entries join the queue with a deadline of now+retention
// under the write lock, so the queue is in ending order and in expiry order
// at once, and its front is the oldest result. Callers hold mu for writing.
func (m *Store) retain(e *entry) {
	now := time.Now()
	e.expiresAt = now.Add(m.retention)
	m.listEnded(e)
	for v := m.ended.victim(e.q.Owner, m.maxRetainedPerAgent, m.maxRetained); v != nil; v = m.ended.victim(e.q.Owner, m.maxRetainedPerAgent, m.maxRetained) {
		m.evict(v, now)
	}
}

// evict ends e's retention now: from here on it is expired, so Get, Wait and
// Settle answer ErrNotFound exactly as for a question past retention. Without
// a journal it is forgotten at once. With one it stays in the map, hidden,
// until the janitor has deleted its record (which holds its id against a
// newcomer whose record the deletion would erase): the first eviction of a
// batch tells the janitor to delete within evictionDelay, a full batch to
// delete now.
// A crash before the deletion leaves one record too many, which Open evicts
// again. Callers hold mu for writing.
func (m *Store) evict(e *entry, now time.Time) {
	if e.expiresAt.After(now) {
		e.expiresAt = now
	}
	m.ended.remove(e)
	m.evictedSize += e.charged
	m.release(e)
	if m.journal == nil {
		m.forget(e)
		return
	}
	m.evicted = append(m.evicted, e)
	wake := m.sweepLater
	if len(m.evicted) >= evictionBatch || m.evictedSize >= evictionBatchBytes {
		wake = m.sweepSoon
	} else if m.sweepTold {
		return // the batch's first eviction has told the janitor
	}
	m.sweepTold = true
	select {
	case wake <- struct{}{}:
	default: // already told; the sweep takes every evicted entry
	}
}

// sweep forgets the expired prefix of the expiry queue and the evicted
// entries, and the remembered keys whose time is over. With a journal, the
// records go first, in one commit that also stores the forgotten
// questions' keys (see forgetRecords); if it fails,
// the entries stay (hidden, since they are expired) and the next sweep tries
// again.
func (m *Store) sweep(now time.Time) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	var expired []*entry
	for e := m.ended.front(); e != nil && e.expired(now); e = m.ended.front() {
		m.ended.remove(e)
		m.release(e)
		expired = append(expired, e)
	}
	expired = append(expired, m.evicted...)
	m.evicted, m.evictedSize, m.sweepTold = nil, 0, false
	drop := m.expireGoneKeys(now)
	if m.journal == nil || len(expired) == 0 && len(drop) == 0 {
		for _, e := range expired {
			m.forget(e)
		}
		m.mu.Unlock()
		return
	}

	var doomed, kept []*entry
	var ids []string
	var keep []GoneKey // the keys of the doomed, remembered in the same commit
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
			if k, ok := keyOf(e.q); ok && m.keys[k] == e {
				keep = append(keep, m.goneKeyOf(e, now))
			}
		}
	}
	swept := make(chan struct{})
	m.sweepDone = swept
	m.mu.Unlock()

	err := forgetRecords(context.Background(), m.journal, ids, keep, drop)

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
		m.goneDropped = append(m.goneDropped, drop...)
	}
	// Expired, so they leave the expiry queue for good; the next sweep
	// (the next eviction, or the next tick) tries them again.
	m.evicted = append(m.evicted, kept...)
	m.sweepDone = nil
	close(swept)
	m.mu.Unlock()
}

// forget removes an ended entry from the map, by identity: the id may
// already belong to a newer question. Callers hold mu for writing.
func (m *Store) forget(e *entry) {
	m.release(e)
	if m.entries[e.q.ID] == e {
		delete(m.entries, e.q.ID)
	}
	m.forgetKey(e)
	m.forgetSession(e)
}
