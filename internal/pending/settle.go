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
//
// With a journal, the ending is committed before the question counts as
// ended. If the commit fails, the question stays pending, nothing is woken or
// reported, and the error wraps ErrUnavailable.
func (m *Store) Settle(ctx context.Context, id string, o Outcome) (*Question, error) {
	e, err := m.lookup("settle", id)
	if err != nil {
		return nil, err
	}
	return m.end(ctx, e, o)
}

// SettleAll ends every pending question with o (shutdown of a store that
// cannot keep them) and returns the ended copies, oldest first. OnEnd runs
// once per question, in this goroutine. Questions that a rival ends while
// SettleAll runs are left to the rival and not returned. With a journal it
// stops at the first failed commit, returning what it ended before.
func (m *Store) SettleAll(ctx context.Context, o Outcome) ([]*Question, error) {
	if !m.rlockOpen() {
		return nil, fmt.Errorf("settle all questions: %w", ErrClosed)
	}
	targets := m.pendingEntriesLocked()
	m.mu.RUnlock()

	if o.At.IsZero() {
		o.At = time.Now()
	}
	settled := make([]*Question, 0, len(targets))
	for _, e := range targets {
		q, err := m.end(ctx, e, o)
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

// Retries of a timeout whose commit failed wait timeoutRetryMin, doubling
// up to timeoutRetryMax.
const (
	timeoutRetryMin = 100 * time.Millisecond
	timeoutRetryMax = 30 * time.Second
)

func timeoutRetryDelay(attempt int) time.Duration {
	delay := timeoutRetryMin
	for range attempt {
		if delay >= timeoutRetryMax/2 {
			return timeoutRetryMax
		}
		delay *= 2
	}
	return delay
}

// timeOut is the deadline callback, run in the timer's own goroutine;
// attempt counts the earlier tries whose commit failed.
func (m *Store) timeOut(e *entry, attempt int) {
	m.mu.RLock()
	if m.closed || m.noTimeouts {
		m.mu.RUnlock()
		return
	}
	// Registered under the read lock, so Close (which sets closed under the
	// write lock and then waits) never misses a callback that is running.
	m.timers.Add(1)
	m.mu.RUnlock()
	defer m.timers.Done()

	_, err := m.end(context.Background(), e, Outcome{Ending: EndTimeout, Result: Result{Action: ActionCancel}})
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrClosed):
	case errors.Is(err, ErrUnavailable):
		// The question is overdue but still pending; it must not stay so
		// forever because the journal hiccupped once.
		delay := timeoutRetryDelay(attempt)
		m.log.Warn("question timeout not recorded; retrying", zap.String("id", e.q.ID),
			zap.Int("attempt", attempt+1), zap.Duration("retry_in", delay), zap.Error(err))
		m.retryTimeOut(e, delay, attempt+1)
	default:
		m.log.Warn("question timeout failed", zap.String("id", e.q.ID), zap.Error(err))
	}
}

// retryTimeOut arms e's timer to try its timeout again after delay, unless
// the store is closing or the question has ended meanwhile. Close stops the
// timers of pending questions after setting closed, so it stops this one too.
func (m *Store) retryTimeOut(e *entry, delay time.Duration, attempt int) {
	m.armTimeOut(e, func() time.Duration { return delay }, attempt)
}

// armTimeOut arms e's timer to call timeOut(e, attempt) after the delay
// that after returns, read once the locks are held, unless the store is
// closing, timeouts are off or the question has ended.
func (m *Store) armTimeOut(e *entry, after func() time.Duration, attempt int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed || m.noTimeouts {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.outcome == nil {
		e.timer = time.AfterFunc(after(), func() { m.timeOut(e, attempt) })
	}
}

// end is every ending's single path: without a journal it decides the
// ending under the store's lock; with one it commits the ending first.
func (m *Store) end(ctx context.Context, e *entry, o Outcome) (*Question, error) {
	id := e.q.ID
	if hook := m.onSettleEntered; hook != nil {
		hook(id, o.Ending)
	}
	if o.At.IsZero() {
		o.At = time.Now()
	}
	o = cloneOutcome(o)
	if m.journal != nil {
		return m.endDurably(ctx, e, o)
	}

	m.mu.Lock()
	// Checked under the same lock as the ending: Close cannot slip in between.
	if m.closed {
		m.mu.Unlock()
		return nil, fmt.Errorf("settle question %q: %w", id, ErrClosed)
	}
	reported, returned := m.decide(e, o)
	m.mu.Unlock()
	if reported == nil {
		return nil, fmt.Errorf("settle question %q: already ended: %w", id, ErrNotFound)
	}
	m.report(reported)
	return returned, nil
}

// endDurably commits the ending of e, then applies it. Holding e.settling
// from the check that e is pending until the ending is applied makes rival
// endings of e wait, so exactly one of them commits; endings of other
// questions commit alongside.
func (m *Store) endDurably(ctx context.Context, e *entry, o Outcome) (*Question, error) {
	id := e.q.ID
	if err := e.takeSettling(ctx); err != nil {
		return nil, fmt.Errorf("settle question %q: %w", id, err)
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		<-e.settling
		return nil, fmt.Errorf("settle question %q: %w", id, ErrClosed)
	}
	m.commits.Add(1) // under the read lock, like timers: Close waits for it
	m.mu.RUnlock()
	defer m.commits.Done()

	e.mu.Lock()
	ended := e.outcome != nil
	record := e.snapshot()
	e.mu.Unlock()
	if ended {
		<-e.settling
		return nil, fmt.Errorf("settle question %q: already ended: %w", id, ErrNotFound)
	}
	record.Ended = &o
	if err := m.journal.Put(ctx, record); err != nil {
		<-e.settling
		return nil, fmt.Errorf("settle question %q: %w", id, journalError(err))
	}

	// Even if Close has begun: it waits for this commit, and what is
	// committed must be true in memory too.
	m.mu.Lock()
	reported, returned := m.decide(e, o)
	m.mu.Unlock()
	<-e.settling
	if reported == nil { // cannot happen while every ending holds settling
		return nil, fmt.Errorf("settle question %q: already ended: %w", id, ErrNotFound)
	}
	m.report(reported)
	return returned, nil
}

// decide ends e with o unless it has already ended (then it returns nils).
// It decides the winner, wakes the waiters and moves the entry from the
// pending index to the expiry queue (evicting the oldest result if the queue
// is full) in one critical section, so no reader ever sees a question that
// is both ended and listed. Callers hold mu for writing.
func (m *Store) decide(e *entry, o Outcome) (reported, returned *Question) {
	e.mu.Lock()
	if e.outcome != nil {
		e.mu.Unlock()
		return nil, nil
	}
	e.outcome = &o
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil // a retained result keeps nothing it no longer needs
	}
	close(e.done)
	// The parsed form is most of what a question costs in memory, and only
	// a reply needs it: retained results are kept without it, and without
	// the encoded listing. No reader copies e.q without e.mu, and List and
	// Count no longer see e.
	e.q.Form, e.q.Listing = nil, nil
	reported, returned = e.snapshot(), e.snapshot()
	shareText(e.q) // after the snapshots: OnEnd gets the question as it was asked
	e.mu.Unlock()

	m.pending.Remove(e.elem)
	e.elem = nil
	m.pendingVersion.Add(1)
	m.sessionEnded(e)
	// An ended entry is only replaced once expired, so this holds; checked
	// anyway so that a stale entry can never be queued for a newer one's id.
	if m.entries[e.q.ID] == e {
		m.charge(e) // what it weighs now that it has ended
		m.retain(e)
	} else {
		m.forgetSession(e)
	}
	return reported, returned
}

// report tells OnEnd about an ending, with no lock held.
func (m *Store) report(q *Question) {
	// A question's life is logged at info (asked by the API, ended here):
	// ids, who and how, never the question's text or answers.
	if ce := m.log.Check(zap.InfoLevel, "question ended"); ce != nil {
		fields := []zap.Field{zap.String("id", q.ID), zap.String("session", q.SessionID)}
		if q.Owner != "" {
			fields = append(fields, zap.String("agent", q.Owner))
		}
		fields = append(fields, zap.String("ending", string(q.Ended.Ending)), zap.String("action", q.Ended.Result.Action),
			zap.Duration("waited", q.Ended.At.Sub(q.CreatedAt).Round(time.Millisecond)))
		ce.Write(fields...)
	}
	if m.onEnd != nil {
		m.onEnd(q)
	}
}

// StopTimeouts makes deadlines end nothing from now on, and returns once
// every timeout already under way has ended its question (and OnEnd has
// returned), or ctx ends. The store stays open otherwise: reads, replies and
// withdrawals work as before.
//
// A shutdown calls it before it stops announcing endings: with a durable
// store, a question whose deadline passed later would be stored as ended
// but never announced, as event streams are closing. Left pending, it is
// ended as timed out by the next start (restored questions past their
// deadline end so).
func (m *Store) StopTimeouts(ctx context.Context) error {
	if !m.lockOpen() {
		return fmt.Errorf("stop timeouts: %w", ErrClosed)
	}
	m.noTimeouts = true
	armed := m.pendingEntriesLocked()
	m.mu.Unlock()
	stopTimers(armed)
	// A callback that got past the check before noTimeouts was set is
	// counted in timers (it registers under the read lock).
	done := make(chan struct{})
	go func() {
		m.timers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop timeouts: %w", ctx.Err())
	}
}
