package pending

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// entry is one question and its future. The question record never changes
// after Create; everything that does is below.
//
// Fields under mu: outcome, timer. done is closed under mu, exactly once, in
// the same critical section that sets outcome, so a nil outcome means done
// is open and every closer can tell whether it lost. Writers of outcome also
// hold Store.mu, so holders of Store.mu may read outcome without mu.
//
// Fields under Store.mu: elem, expiresAt, sweeping, endedElem, ownerElem
// and charged, the entry's place in the store's indexes (elem is nil once
// the question has ended, endedElem once its result is no longer retained).
//
// With a journal, settling (a one-slot semaphore) serialises the endings of
// one entry: an ending holds it from its check that the question is pending,
// through the journal commit, to setting outcome, so two endings never both
// commit. It is taken before Store.mu and never while holding it or mu, so
// commits of different questions run side by side. A channel rather than a
// mutex, so that a rival waiting for it can give up when its ctx ends.
type entry struct {
	q        *Question     // immutable after Create but for Form, dropped (under mu) when it ends; Ended is always nil here
	done     chan struct{} // closed when the question ends; wakes every waiter
	settling chan struct{} // holds a value while an ending commits

	mu      sync.Mutex
	outcome *Outcome
	timer   *time.Timer // the deadline (or a retry of its commit), or nil

	elem      *list.Element // place in Store.pending while pending
	listedAt  uint64        // when it joined Store.pending, in Store.seq ticks
	endedAt   uint64        // when it joined Store.ended, in Store.seq ticks
	expiresAt time.Time     // zero until the ending is indexed for expiry; now, once evicted
	sweeping  bool          // its record is being deleted from the journal
	endedElem *list.Element // place in Store.ended's queue while its result is retained
	ownerElem *list.Element // place in its owner's part of that queue
	charged   int64         // bytes it counts against the budgets (see budget.go); 0 once released
}

// newEntry returns a pending entry for q; only a durable store's entries
// need the settling semaphore.
func newEntry(q *Question, durable bool) *entry {
	e := &entry{q: q, done: make(chan struct{})}
	if durable {
		e.settling = make(chan struct{}, 1)
	}
	return e
}

// takeSettling takes e.settling, waiting for a rival ending that holds it;
// it gives up, with ctx's error, when ctx ends first. The taker releases it
// with <-e.settling.
func (e *entry) takeSettling(ctx context.Context) error {
	select {
	case e.settling <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
// hold Store.mu (read or write).
func (e *entry) expired(now time.Time) bool {
	return !e.expiresAt.IsZero() && !now.Before(e.expiresAt)
}

// hasEnded reports whether done is closed, without waiting.
func (e *entry) hasEnded() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}
