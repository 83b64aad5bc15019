package pending

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Open builds a durable store on opts.Journal, which must not be nil, and
// restores it from the journal's records:
//
//   - Pending questions come back with their ids, in creation order
//     (CreatedAt, then ID), with their Deadline: their timeouts keep counting
//     from the original deadline.
//   - Pending questions whose deadline passed while no store was running end
//     as EndTimeout/cancel once everything is restored: committed together,
//     then reported to OnEnd, one by one, in Open's goroutine (OnEnd may use
//     the store). If that commit fails they stay pending and are retried like
//     any timeout whose commit failed.
//   - Ended questions stay readable until Retention after their Outcome.At;
//     older ones are deleted from the journal, and so are the oldest beyond
//     MaxRetained.
//   - Idempotency keys come back with the questions that hold them (see
//     FindKey).
//
// Restored questions have no Form. Open fails, with nothing changed, if the
// journal cannot be read or the expired records cannot be deleted.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Journal == nil {
		return nil, fmt.Errorf("open store: no journal: %w", ErrInvalid)
	}
	records, err := opts.Journal.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", journalError(err))
	}
	m := newStore(opts)
	now := time.Now()
	var pending, ended []*entry
	var forgotten []string
	seen := make(map[string]bool, len(records))
	for _, rec := range records {
		switch {
		case rec == nil || rec.ID == "":
			return nil, fmt.Errorf("open store: a record without an id: %w", ErrInvalid)
		case seen[rec.ID]:
			return nil, fmt.Errorf("open store: two records for question %q: %w", rec.ID, ErrInvalid)
		}
		seen[rec.ID] = true
		e := newEntry(cloneForStore(rec), true)
		e.q.Form = nil
		if rec.Ended == nil {
			pending = append(pending, e)
			continue
		}
		e.q.Listing = nil
		shareText(e.q)
		o := cloneOutcome(*rec.Ended)
		expires := o.At.Add(m.retention)
		if !now.Before(expires) {
			forgotten = append(forgotten, rec.ID)
			continue
		}
		// A clock set back, or an ending dated in the future, must not keep
		// a record longer than a fresh ending would be kept.
		if latest := now.Add(m.retention); expires.After(latest) {
			expires = latest
		}
		e.outcome, e.expiresAt = &o, expires
		close(e.done)
		ended = append(ended, e)
	}
	slices.SortFunc(pending, func(a, b *entry) int {
		if c := a.q.CreatedAt.Compare(b.q.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.q.ID, b.q.ID)
	})
	slices.SortFunc(ended, func(a, b *entry) int {
		if c := a.expiresAt.Compare(b.expiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.q.ID, b.q.ID)
	})
	// The bounds hold across restarts too: a store stopped before it
	// deleted the records it evicted, or smaller bounds, keep the newest.
	var keep, drop []GoneKey
	for _, rec := range records {
		if rec != nil && rec.Ended != nil && rec.IdempotencyKey != "" && !now.Before(rec.Ended.At.Add(m.retention)) {
			keep = append(keep, GoneKey{Owner: rec.Owner, Key: rec.IdempotencyKey, ID: rec.ID, RequestHash: rec.RequestHash,
				Until: rec.Ended.At.Add(m.retention).Add(m.keyRetention)})
		}
	}
	m.mu.Lock()
	for _, e := range ended {
		m.listEnded(e)
	}
	evicted := 0
	for _, owner := range slices.Sorted(maps.Keys(m.ended.byOwner)) {
		for v := m.ended.victim(owner, m.maxRetainedPerAgent, m.maxRetained); v != nil; v = m.ended.victim(owner, m.maxRetainedPerAgent, m.maxRetained) {
			m.ended.remove(v)
			forgotten = append(forgotten, v.q.ID)
			if v.q.IdempotencyKey != "" {
				keep = append(keep, m.goneKeyOf(v, now))
			}
			evicted++
		}
	}
	for el := m.ended.all.Front(); el != nil; el = el.Next() {
		m.track(el.Value.(*entry)) // oldest expiry first: a key's newest question wins
	}
	m.mu.Unlock()
	fresh := keep // stored with the deletions below
	if kj, ok := m.journal.(KeyJournal); ok {
		stored, err := kj.LoadGone(ctx)
		if err != nil {
			return nil, fmt.Errorf("open store: %w", journalError(err))
		}
		keep = append(stored, keep...)
	}
	slices.SortStableFunc(keep, func(a, b GoneKey) int { return a.Until.Compare(b.Until) })
	m.mu.Lock()
	for _, g := range keep {
		if !now.Before(g.Until) {
			drop = append(drop, g)
			continue
		}
		if _, live := m.keys[requestKey{g.Owner, g.Key}]; !live {
			m.remember(g)
		}
	}
	fresh = slices.DeleteFunc(fresh, func(g GoneKey) bool { return !now.Before(g.Until) })
	drop = append(drop, m.goneDropped...)
	m.goneDropped = nil
	m.mu.Unlock()
	if err := forgetRecords(ctx, m.journal, forgotten, fresh, drop); err != nil {
		return nil, fmt.Errorf("open store: delete expired questions: %w", journalError(err))
	}

	var overdue []*entry
	m.mu.Lock()
	for _, e := range pending {
		if d := e.q.Deadline; !d.IsZero() && !now.Before(d) {
			// Listed without a timer: ended below, once all is in place.
			m.listPending(e)
			m.track(e)
			overdue = append(overdue, e)
			continue
		}
		m.index(e)
	}
	m.mu.Unlock()
	go m.janitor()
	m.log.Info("questions restored", zap.Int("pending", len(pending)-len(overdue)), zap.Int("overdue", len(overdue)),
		zap.Int("ended", len(ended)), zap.Int("expired", len(forgotten)-evicted), zap.Int("evicted", evicted))

	m.timeOutOverdue(ctx, overdue)
	return m, nil
}

// timeOutOverdue ends the questions whose deadline passed while no store was
// running, with one commit. Nothing can end them meanwhile: they have no
// timer, and no caller has the store yet.
func (m *Store) timeOutOverdue(ctx context.Context, overdue []*entry) {
	if len(overdue) == 0 {
		return
	}
	o := Outcome{Ending: EndTimeout, Result: Result{Action: ActionCancel}, At: time.Now()}
	records := make([]*Question, len(overdue))
	for i, e := range overdue {
		record, ending := *e.q, o
		record.Ended = &ending
		records[i] = &record
	}
	if err := m.journal.Put(ctx, records...); err != nil {
		if errors.Is(journalError(err), ErrNotFound) {
			// A shared journal: another replica ended one of them first.
			// Each is tried on its own, and the losers learn the ending.
			m.log.Debug("overdue questions ended elsewhere meanwhile; timing them out one by one", zap.Int("questions", len(overdue)))
		} else {
			m.log.Warn("overdue questions not recorded as timed out; retrying", zap.Int("questions", len(overdue)), zap.Error(err))
		}
		for _, e := range overdue {
			m.retryTimeOut(e, timeoutRetryDelay(0), 1)
		}
		return
	}
	for _, e := range overdue {
		m.mu.Lock()
		reported, _ := m.decide(e, o)
		m.mu.Unlock()
		m.report(reported)
	}
}
