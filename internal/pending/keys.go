package pending

import (
	"context"
	"fmt"
	"time"
)

// requestKey is an agent's Idempotency-Key: keys of different owners never
// meet, so one agent cannot reach another's question by guessing its key.
type requestKey struct {
	owner, key string
}

// keyOf is the index key of q, and whether q has one.
func keyOf(q *Question) (requestKey, bool) {
	return requestKey{q.Owner, q.IdempotencyKey}, q.IdempotencyKey != ""
}

// FindKey returns the live question (pending, or ended within retention)
// that owner asked with Idempotency-Key key, or an error wrapping
// ErrNotFound. A key whose question has been forgotten is free again.
func (m *Store) FindKey(ctx context.Context, owner, key string) (*Question, error) {
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return nil, fmt.Errorf("find idempotency key: %w", ErrClosed)
	}
	e, ok := m.keys[requestKey{owner, key}]
	if !ok || e.expired(time.Now()) {
		m.mu.RUnlock()
		return nil, fmt.Errorf("find idempotency key: %w", ErrNotFound)
	}
	m.mu.RUnlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshot(), nil
}

// keyTaken reports whether a live question holds q's key, or a Create of
// one is committing. Callers hold mu.
func (m *Store) keyTaken(q *Question, now time.Time) bool {
	k, ok := keyOf(q)
	if !ok {
		return false
	}
	if _, creating := m.keying[k]; creating {
		return true
	}
	old, held := m.keys[k]
	return held && !old.expired(now)
}

// indexKey makes e the holder of its key. Callers hold mu for writing.
func (m *Store) indexKey(e *entry) {
	if k, ok := keyOf(e.q); ok {
		m.keys[k] = e
	}
}

// forgetKey frees e's key, by identity: a newer question may hold it
// already. Callers hold mu for writing.
func (m *Store) forgetKey(e *entry) {
	if k, ok := keyOf(e.q); ok && m.keys[k] == e {
		delete(m.keys, k)
	}
}
