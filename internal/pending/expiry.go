package pending

import "time"

// janitor forgets ended questions past retention, so the map does not grow
// with every question ever asked. Get and Wait already hide expired entries,
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
// is ordered by expiry.
func (m *Memory) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	n := 0
	for n < len(m.ended) && m.ended[n].expired(now) {
		e := m.ended[n]
		// By identity: the id may already belong to a newer question.
		if m.entries[e.q.ID] == e {
			delete(m.entries, e.q.ID)
		}
		m.ended[n] = nil
		n++
	}
	m.ended = m.ended[n:]
}
