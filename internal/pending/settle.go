package pending

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Settle ends a pending question with o. The first ending wins; every later
// one gets ErrNotFound. It returns the ended copy, after OnEnd has returned.
// A zero o.At becomes now.
func (m *Memory) Settle(ctx context.Context, id string, o Outcome) (*Question, error) {
	e, err := m.lookup("settle", id)
	if err != nil {
		return nil, err
	}
	return m.end(e, o)
}

// SettleAll ends every pending question with o (shutdown of a store that
// cannot keep them) and returns the ended copies, oldest first. OnEnd runs
// once per question, in this goroutine. Questions that a rival ends while
// SettleAll runs are left to the rival and not returned.
func (m *Memory) SettleAll(ctx context.Context, o Outcome) ([]*Question, error) {
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return nil, fmt.Errorf("settle all questions: %w", ErrClosed)
	}
	targets := make([]*entry, 0, m.pending.Len())
	for el := m.pending.Front(); el != nil; el = el.Next() {
		targets = append(targets, el.Value.(*entry))
	}
	m.mu.RUnlock()

	if o.At.IsZero() {
		o.At = time.Now()
	}
	settled := make([]*Question, 0, len(targets))
	for _, e := range targets {
		q, err := m.end(e, o)
		switch {
		case err == nil:
			settled = append(settled, q)
		case errors.Is(err, ErrNotFound):
			// Lost to a rival ending, which reported it.
		default:
			return settled, fmt.Errorf("settle all questions: %w", err)
		}
	}
	return settled, nil
}

// timeOut is the deadline callback, run in the timer's own goroutine.
func (m *Memory) timeOut(e *entry) {
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return
	}
	// Registered under the read lock, so Close (which sets closed under the
	// write lock and then waits) never misses a callback that is running.
	m.timers.Add(1)
	m.mu.RUnlock()
	defer m.timers.Done()

	_, err := m.end(e, Outcome{Ending: EndTimeout, Result: Result{Action: ActionCancel}})
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrClosed) {
		m.log.Warn("question timeout failed", zap.String("id", e.q.ID), zap.Error(err))
	}
}

// end is every ending's single path. It decides the winner, wakes the
// waiters and moves the entry from the pending index to the expiry queue in
// one critical section, so no reader ever sees a question that is both ended
// and listed; the winner then reports the ending to OnEnd with no lock held.
func (m *Memory) end(e *entry, o Outcome) (*Question, error) {
	id := e.q.ID
	if hook := m.onSettleEntered; hook != nil {
		hook(id, o.Ending)
	}
	if o.At.IsZero() {
		o.At = time.Now()
	}
	o = cloneOutcome(o)

	m.mu.Lock()
	// Checked under the same lock as the ending: Close cannot slip in between.
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("settle question %q: %w", id, ErrClosed)
	}
	e.mu.Lock()
	if e.outcome != nil {
		e.mu.Unlock()
		m.mu.Unlock()
		return nil, fmt.Errorf("settle question %q: already ended: %w", id, ErrNotFound)
	}
	e.outcome = &o
	if e.timer != nil {
		e.timer.Stop()
	}
	close(e.done)
	reported, returned := e.snapshot(), e.snapshot()
	e.mu.Unlock()

	m.pending.Remove(e.elem)
	e.elem = nil
	// An ended entry is only replaced once expired, so this holds; checked
	// anyway so that a stale entry can never be queued for a newer one's id.
	if m.entries[id] == e {
		e.expiresAt = time.Now().Add(m.retention)
		m.ended = append(m.ended, e)
	}
	m.mu.Unlock()

	if ce := m.log.Check(zap.DebugLevel, "question ended"); ce != nil {
		ce.Write(zap.String("id", id), zap.String("ending", string(o.Ending)), zap.String("action", o.Result.Action))
	}
	if m.onEnd != nil {
		m.onEnd(reported)
	}
	return returned, nil
}
