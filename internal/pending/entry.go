package pending

import (
	"container/list"
	"sync"
	"time"
)

// entry is one question and its future. The question record never changes
// after Create; everything that does is below.
//
// Fields under mu: outcome, timer. done is closed under mu, exactly once, in
// the same critical section that sets outcome, so a nil outcome means done
// is open and every closer can tell whether it lost. Writers of outcome also
// hold Memory.mu, so holders of Memory.mu may read outcome without mu.
//
// Fields under Memory.mu: elem and expiresAt, the entry's place in the
// store's indexes (elem is nil once the question has ended).
type entry struct {
	q    *Question     // immutable after Create; Ended is always nil here
	done chan struct{} // closed when the question ends; wakes every waiter

	mu      sync.Mutex
	outcome *Outcome
	timer   *time.Timer // the deadline, or nil

	elem      *list.Element // place in Memory.pending while pending
	expiresAt time.Time     // zero until the ending is indexed for expiry
}

func newEntry(q *Question) *entry {
	return &entry{q: q, done: make(chan struct{})}
}

// snapshot returns a copy of the question as it stands. Callers hold e.mu.
func (e *entry) snapshot() *Question {
	c := *e.q
	if e.outcome != nil {
		o := *e.outcome
		c.Ended = &o
	}
	return &c
}

// expired reports whether e is an ended question past retention. Callers
// hold Memory.mu (read or write).
func (e *entry) expired(now time.Time) bool {
	return !e.expiresAt.IsZero() && !now.Before(e.expiresAt)
}
