package pending

import (
	"container/list"
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
// that owner asked with Idempotency-Key key. A key whose question has been
// forgotten (past retention, or evicted) is remembered for KeyRetention
// longer: FindKey then fails with a *KeyGoneError (wrapping ErrGone), so a
// retry learns that its result is lost instead of asking again. A key it
// never saw, or forgot, fails with ErrNotFound.
func (m *Store) FindKey(ctx context.Context, owner, key string) (*Question, error) {
	if !m.rlockOpen() {
		return nil, fmt.Errorf("find idempotency key: %w", ErrClosed)
	}
	now := time.Now()
	k := requestKey{owner, key}
	e, ok := m.keys[k]
	if ok && e.expired(now) {
		// Forgotten, but its record not deleted yet: it is gone already.
		gone := &KeyGoneError{ID: e.q.ID, RequestHash: e.q.RequestHash}
		m.mu.RUnlock()
		return nil, fmt.Errorf("find idempotency key: %w", gone)
	}
	if !ok {
		el, remembered := m.gone[k]
		var gone *KeyGoneError
		if remembered && now.Before(el.Value.(*GoneKey).Until) {
			g := el.Value.(*GoneKey)
			gone = &KeyGoneError{ID: g.ID, RequestHash: g.RequestHash}
		}
		m.mu.RUnlock()
		if gone != nil {
			return nil, fmt.Errorf("find idempotency key: %w", gone)
		}
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
// already, and remembers it as gone. Callers hold mu for writing.
func (m *Store) forgetKey(e *entry) {
	if k, ok := keyOf(e.q); ok && m.keys[k] == e {
		delete(m.keys, k)
		if e.outcome != nil {
			m.remember(m.goneKeyOf(e, time.Now()))
		}
	}
}

// GoneKey is the Idempotency-Key of a question the store has forgotten,
// remembered (a few hundred bytes at most) until Until, so that a retry of
// the request that asked it is told its result is gone.
type GoneKey struct {
	Owner       string    `json:"owner"`
	Key         string    `json:"key"`
	ID          string    `json:"id"`          // the question the key asked
	RequestHash string    `json:"requestHash"` // that request's fingerprint
	Until       time.Time `json:"until"`
}

// KeyGoneError says that an Idempotency-Key named a question whose result
// has been forgotten; it wraps ErrGone.
type KeyGoneError struct {
	ID          string // the question the key asked
	RequestHash string // the fingerprint of the request that asked it
}

func (e *KeyGoneError) Error() string {
	return fmt.Sprintf("question %q: %s", e.ID, ErrGone)
}

func (e *KeyGoneError) Unwrap() error { return ErrGone }

// goneKeyOf is the GoneKey to remember for e, forgotten at now.
func (m *Store) goneKeyOf(e *entry, now time.Time) GoneKey {
	return GoneKey{Owner: e.q.Owner, Key: e.q.IdempotencyKey, ID: e.q.ID, RequestHash: e.q.RequestHash, Until: now.Add(m.keyRetention)}
}

// remember keeps g until g.Until, replacing what the store remembered for
// its key. Beyond maxGonePerAgent keys of g's owner, that owner's oldest is
// dropped (one agent's churn never drops another's). Callers hold mu for
// writing.
func (m *Store) remember(g GoneKey) {
	k := requestKey{g.Owner, g.Key}
	if el, ok := m.gone[k]; ok {
		m.dropGone(el, false)
	}
	owned := m.goneByOwner[g.Owner]
	if owned == nil {
		owned = list.New()
		m.goneByOwner[g.Owner] = owned
	}
	m.gone[k] = owned.PushBack(&g)
	if owned.Len() > m.maxGonePerAgent {
		m.dropGone(owned.Front(), true)
	}
}

// dropGone forgets a remembered key; stored, it is also deleted from the
// journal at the next sweep. Callers hold mu for writing.
func (m *Store) dropGone(el *list.Element, stored bool) {
	g := el.Value.(*GoneKey)
	delete(m.gone, requestKey{g.Owner, g.Key})
	if owned := m.goneByOwner[g.Owner]; owned != nil {
		owned.Remove(el)
		if owned.Len() == 0 {
			delete(m.goneByOwner, g.Owner)
		}
	}
	if stored && m.journal != nil {
		m.goneDropped = append(m.goneDropped, *g)
	}
}

// expireGoneKeys drops the remembered keys whose time is over and returns
// them, with those dropped since the last sweep, for the journal to delete.
// Callers hold mu for writing.
func (m *Store) expireGoneKeys(now time.Time) []GoneKey {
	for _, owned := range m.goneByOwner {
		for el := owned.Front(); el != nil && !now.Before(el.Value.(*GoneKey).Until); el = owned.Front() {
			m.dropGone(el, true)
		}
	}
	dropped := m.goneDropped
	m.goneDropped = nil
	return dropped
}
