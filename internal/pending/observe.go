package pending

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Observe applies to this store a change that another store sharing its
// journal (another replica) committed: q is a record as the journal holds
// it, pending (a creation) or ended (an ending). The store's journal is not
// written: the change is already there.
//
//   - A creation of a question the store does not hold makes it pending
//     here too, with its deadline armed: every replica's timer may try the
//     timeout, and the journal lets exactly one commit it.
//   - An ending of a question pending here ends it here: its waiters wake
//     with the ending. An ending that this store is committing itself waits
//     for that commit, so it is applied and reported once.
//   - Anything the store already knows (its own changes, seen again) is
//     ignored, so a change may be observed more than once. A creation this
//     store is committing itself waits for that commit to be over, so that
//     once Observe returns the question is found here.
//
// Each change applied is reported to Options.OnObserve, not to OnEnd:
// the replica that made the change reports it to OnEnd (webhooks go once).
// Observe reports whether it applied the change.
func (m *Store) Observe(ctx context.Context, q *Question) (bool, error) {
	if q == nil || q.ID == "" {
		return false, fmt.Errorf("observe question: no id: %w", ErrInvalid)
	}
	if q.Ended == nil {
		return m.observeCreation(ctx, q)
	}
	return m.observeEnding(ctx, q.ID, cloneOutcome(*q.Ended))
}

func (m *Store) observeCreation(ctx context.Context, q *Question) (bool, error) {
	stored := cloneForStore(q)
	stored.Form = nil // built by whoever needs it (a reply) from Message and Schema
	e := newEntry(stored, true)
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return false, fmt.Errorf("observe question %q: %w", q.ID, ErrClosed)
		}
		committing, creating := m.creating[q.ID]
		if !creating {
			break
		}
		// This store's own creation, seen in the journal before its
		// committer indexed it: wait for that, so that whoever the caller
		// tells of the question next (an event stream) finds it here.
		m.mu.Unlock()
		select {
		case <-committing:
		case <-ctx.Done():
			return false, fmt.Errorf("observe question %q: %w", q.ID, ctx.Err())
		}
		m.mu.Lock()
	}
	if _, held := m.entries[q.ID]; held {
		m.mu.Unlock()
		return false, nil
	}
	// Listed without its timer until it is reported, so that a deadline
	// already past cannot report its ending before its creation.
	m.listPending(e)
	m.track(e)
	m.mu.Unlock()
	if ce := m.log.Check(zap.DebugLevel, "question observed"); ce != nil {
		ce.Write(zap.String("id", q.ID), zap.String("session", q.SessionID))
	}
	m.reportObserved(e.snapshotLocked())
	m.armObserved(e)
	return true, nil
}

// armObserved arms the deadline of an observed question, unless it has
// ended meanwhile or timeouts are off.
func (m *Store) armObserved(e *entry) {
	if e.q.Deadline.IsZero() {
		return
	}
	m.armTimeOut(e, func() time.Duration { return time.Until(e.q.Deadline) }, 0)
}

// observeEnding ends the entry of id with o, if it is pending here. While
// this store commits a creation of id, the ending is kept for the creation
// to apply once it is indexed (a rival can only end what it has seen
// committed, so the creation will succeed).
func (m *Store) observeEnding(ctx context.Context, id string, o Outcome) (bool, error) {
	if !m.lockOpen() {
		return false, fmt.Errorf("observe question %q: %w", id, ErrClosed)
	}
	e, held := m.entries[id]
	if !held {
		if _, creating := m.creating[id]; creating {
			if m.observedEndings == nil {
				m.observedEndings = make(map[string]Outcome)
			}
			m.observedEndings[id] = o
		}
		m.mu.Unlock()
		return false, nil
	}
	m.mu.Unlock()

	// An ending of e committing here holds settling until it is applied.
	if err := e.takeSettling(ctx); err != nil {
		return false, fmt.Errorf("observe question %q: %w", id, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-e.settling
		return false, fmt.Errorf("observe question %q: %w", id, ErrClosed)
	}
	reported, _ := m.decide(e, o)
	m.mu.Unlock()
	<-e.settling
	if reported == nil {
		return false, nil
	}
	if ce := m.log.Check(zap.DebugLevel, "question ending observed"); ce != nil {
		ce.Write(zap.String("id", id), zap.String("ending", string(o.Ending)))
	}
	m.reportObserved(reported)
	return true, nil
}

// applyObservedEnding applies an ending observed while e's creation was
// committing here, once e is indexed.
func (m *Store) applyObservedEnding(e *entry) {
	m.mu.Lock()
	o, ok := m.observedEndings[e.q.ID]
	delete(m.observedEndings, e.q.ID)
	m.mu.Unlock()
	if ok {
		_, _ = m.observeEnding(context.Background(), e.q.ID, o)
	}
}

func (m *Store) reportObserved(q *Question) {
	if m.onObserve != nil {
		m.onObserve(q)
	}
}

// snapshotLocked is snapshot taking e.mu itself.
func (e *entry) snapshotLocked() *Question {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshot()
}

// ObserveForgotten applies a forgetting that another store sharing its
// journal committed: the record of question id was deleted there (its
// retention ended, or a byte budget or a retention bound evicted it), so
// this store forgets the result too and remembers its Idempotency-Key as
// gone, as if it had evicted it itself, without writing to the journal:
// the deletion is there already. A question pending here, or one this
// store is deleting itself, is left alone. It reports whether it forgot
// the question.
func (m *Store) ObserveForgotten(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	e, held := m.entries[id]
	if !held || e.outcome == nil || e.sweeping {
		return false
	}
	if _, creating := m.creating[id]; creating {
		return false
	}
	m.ended.remove(e)
	m.forget(e)
	return true
}
