package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
)

// CatchUpWait bounds how long a read that misses the mirror waits for the
// tailer to apply the changes committed before it.
const CatchUpWait = 5 * time.Second

// Mirror is one replica's question store: a pending.Store restored from
// the shared database and kept in step with the other replicas by a
// Tailer. It is that store, except that a read of a question it
// does not know (Get, Wait, Settle, FindKey answering ErrNotFound) first
// lets the tailer apply every change committed so far and then tries
// again: an agent that asked through one replica finds its question
// through any other at once, even if that replica's tail lags.
type Mirror struct {
	*pending.Store
	db      *DB
	tail    *Tailer
	journal *Journal // set by Follow: Create and Settle wait for their change's turn
}

// OwnChangeWait bounds how long a creation or an ending made through the
// Mirror waits, after its commit, for the tailer to reach it.
const OwnChangeWait = 2 * time.Second

// Follow keeps m, a store that pending.Open restored from j, in step with
// the other replicas: it tails the change log from what j's Load saw and
// hands each change to m.Observe, which ignores this replica's own. Stop
// the mirror before closing m.
func (s *DB) Follow(m *pending.Store, j *Journal, opts TailOptions) *Mirror {
	announce := opts.Announce
	if announce == nil {
		announce = func(*pending.Question) {}
	}
	opts.Resync = func(ctx context.Context) (int64, error) { return s.resync(ctx, m, j, announce) }
	j.trackOwn.Store(true)
	tail := s.Tail(j.LoadedSeq(), func(c Change) {
		defer j.appliedOwn(c.Kind, c.ID, c.Xid)
		if c.Kind == KindForgot {
			// Forgotten by whichever replica deleted the record: forgotten
			// here too, its Idempotency-Key remembered as gone. Not
			// announced: a forgotten result is no event.
			m.ObserveForgotten(c.ID)
			return
		}
		if c.Question == nil {
			// Forgotten (retention) since. An ending still ends the
			// question here, as a resync would: a replica that lagged
			// behind the deletion must not keep it pending for ever.
			if c.Kind == KindEnded {
				s.endGone(m, c.ID, announce)
			}
			return
		}
		if _, err := m.Observe(context.Background(), c.Question); err != nil && !errors.Is(err, pending.ErrClosed) {
			s.log.Warn("change not applied", zap.Int64("seq", c.Seq), zap.String("id", c.Question.ID), zap.Error(err))
		}
		// Applied by Observe or, for this replica's own change, before it
		// committed: either way it is told now, in its place in the log.
		announce(c.Question)
	}, opts)
	mirror := s.Mirror(m, tail)
	mirror.journal = j
	return mirror
}

// resync brings m up to date from every record, for a tailer that fell
// behind what the log keeps: questions m lacks become pending, endings of
// questions pending in m are applied, and questions pending in m whose
// records are gone (ended elsewhere, then deleted by retention while this
// replica was cut off) end here too, rejected, since how they ended is
// lost; results it holds whose records are gone are forgotten. It returns
// the log position the records cover. What it applies is
// told to announce.
func (s *DB) resync(ctx context.Context, m *pending.Store, j *Journal, announce func(*pending.Question)) (int64, error) {
	// Listed before the records are read: every question m holds was
	// committed before it was listed, so the records hold it unless it was
	// deleted. One created here meanwhile is not in this list.
	held, err := m.List(ctx, pending.Filter{Ended: true})
	if err != nil {
		return 0, err
	}
	records, err := j.Load(ctx)
	if err != nil {
		return 0, err
	}
	slices.SortFunc(records, func(a, b *pending.Question) int { return a.CreatedAt.Compare(b.CreatedAt) })
	observe := func(q *pending.Question) error {
		applied, err := m.Observe(ctx, q)
		if applied {
			announce(q)
		}
		return err
	}
	stored := make(map[string]bool, len(records))
	for _, q := range records {
		stored[q.ID] = true
		if q.Ended == nil {
			if err := observe(q); err != nil {
				return 0, err
			}
		}
	}
	for _, q := range records {
		if q.Ended != nil {
			if err := observe(q); err != nil {
				return 0, err
			}
		}
	}
	for _, q := range held {
		if stored[q.ID] {
			continue
		}
		if q.Ended != nil {
			// Forgotten elsewhere while this replica was behind.
			m.ObserveForgotten(q.ID)
			continue
		}
		s.log.Warn("change log: a pending question's record was deleted while this replica was behind; ending it here as rejected", zap.String("id", q.ID))
		if err := observe(goneEnding(q)); err != nil {
			return 0, err
		}
	}
	return j.LoadedSeq(), nil
}

// goneEnding is how q, pending here, ends once its record is gone: how it
// really ended is lost with the record, so as rejected.
func goneEnding(q *pending.Question) *pending.Question {
	gone := *q
	gone.Ended = &pending.Outcome{Ending: pending.EndRejected, Result: pending.Result{Action: pending.ActionCancel}}
	return &gone
}

// endGone applies the ending of question id, whose record was deleted
// before the tail read the ending: if m still holds it pending, it ends
// here as the resync ends such questions, and is announced.
func (s *DB) endGone(m *pending.Store, id string, announce func(*pending.Question)) {
	q, err := m.Get(context.Background(), id)
	if err != nil || q.Ended != nil {
		return // never seen here, or ended here already
	}
	s.log.Warn("change log: a pending question's record was deleted before this replica read its ending; ending it here as rejected", zap.String("id", id))
	gone := goneEnding(q)
	applied, err := m.Observe(context.Background(), gone)
	if err != nil && !errors.Is(err, pending.ErrClosed) {
		s.log.Warn("change not applied", zap.String("id", id), zap.Error(err))
	}
	if applied {
		announce(gone)
	}
}

// Mirror pairs m with the tailer that keeps it in step (Follow does both).
func (s *DB) Mirror(m *pending.Store, tail *Tailer) *Mirror {
	return &Mirror{Store: m, db: s, tail: tail}
}

// Tailer is the tailer that keeps the mirror in step.
func (m *Mirror) Tailer() *Tailer { return m.tail }

// Stop stops applying other replicas' changes; idempotent.
func (m *Mirror) Stop() { m.tail.Stop() }

// Get implements the store's Get, catching up on a miss.
func (m *Mirror) Get(ctx context.Context, id string) (*pending.Question, error) {
	q, err := m.Store.Get(ctx, id)
	if err = m.missed(ctx, err); err != nil {
		return nil, err
	}
	if q == nil {
		return m.Store.Get(ctx, id)
	}
	return q, nil
}

// Wait implements the store's Wait, catching up on a miss.
func (m *Mirror) Wait(ctx context.Context, id string) (*pending.Question, error) {
	q, err := m.Store.Wait(ctx, id)
	if err = m.missed(ctx, err); err != nil {
		return nil, err
	}
	if q == nil {
		return m.Store.Wait(ctx, id)
	}
	return q, nil
}

// Create implements the store's Create. Once the creation is committed it
// waits for the tailer to apply it (and announce it: TailOptions.Announce),
// so that a caller told of the creation finds it on this replica's event
// streams, as on one machine.
func (m *Mirror) Create(ctx context.Context, q *pending.Question) error {
	if err := m.Store.Create(ctx, q); err != nil {
		return err
	}
	m.awaitOwn(ctx, q)
	return nil
}

// awaitOwn waits until the tailer has applied this replica's change of q
// (its creation, or its ending if q has ended), within OwnChangeWait. The
// change is committed already: a tailer that cannot reach it in time (the
// database just went away) is logged, and the caller goes on.
func (m *Mirror) awaitOwn(ctx context.Context, q *pending.Question) {
	if m.journal == nil {
		return
	}
	v, ok := m.journal.own.LoadAndDelete(ownKey(q))
	if !ok {
		return // applied already
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), OwnChangeWait)
	defer cancel()
	// The tail's position passes a transaction once it has applied it.
	if err := m.tail.WaitFor(ctx, v.(int64)+1); err != nil {
		m.db.log.Warn("the change log's tail did not reach this replica's change in time", zap.String("id", q.ID), zap.Int64("xid", v.(int64)), zap.Error(err))
	}
}

// AwaitOwnChanges returns once the tailer has applied every change this
// replica committed, within OwnChangeWait: Create and Settle wait for
// theirs, but endings the store makes on its own (timeouts) do not, and a
// shutdown that stopped following before the tail reached them would
// never announce them on this replica's streams.
func (m *Mirror) AwaitOwnChanges(ctx context.Context) error {
	if m.journal == nil {
		return nil
	}
	last := int64(-1)
	m.journal.own.Range(func(_, v any) bool {
		last = max(last, v.(int64))
		return true
	})
	if last < 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, OwnChangeWait)
	defer cancel()
	if err := m.tail.WaitFor(ctx, last+1); err != nil {
		return fmt.Errorf("waiting for the change log's tail to reach transaction %d: %w", last, err)
	}
	return nil
}

// Settle implements the store's Settle, catching up on a miss (a question
// this replica has not seen yet, or one a rival ended first: then the
// retry answers ErrNotFound again).
//
// Like Create, it returns once its ending has been applied from the log.
func (m *Mirror) Settle(ctx context.Context, id string, o pending.Outcome) (*pending.Question, error) {
	q, err := m.Store.Settle(ctx, id, o)
	if err = m.missed(ctx, err); err != nil {
		return nil, err
	}
	if q == nil {
		if q, err = m.Store.Settle(ctx, id, o); err != nil {
			return nil, err
		}
	}
	m.awaitOwn(ctx, q)
	return q, nil
}

// FindKey implements the store's FindKey, catching up on a miss.
func (m *Mirror) FindKey(ctx context.Context, owner, key string) (*pending.Question, error) {
	q, err := m.Store.FindKey(ctx, owner, key)
	if err = m.missed(ctx, err); err != nil {
		return nil, err
	}
	if q == nil {
		return m.Store.FindKey(ctx, owner, key)
	}
	return q, nil
}

// missed decides what a first try's error means. A miss (ErrNotFound) is
// only believed once the tailer has applied every change committed before
// it: missed returns nil then, for the caller to try again. If the mirror
// cannot catch up (the database is unreachable, the tail lags by more than
// CatchUpWait) the answer is unknown, which is ErrUnavailable (503, try
// again), not a 404 for a question that may exist. Other errors stand.
func (m *Mirror) missed(ctx context.Context, err error) error {
	if !errors.Is(err, pending.ErrNotFound) {
		return err
	}
	if cerr := m.CatchUp(ctx); cerr != nil {
		if ctx.Err() != nil {
			return err // the caller is gone; the first answer will do
		}
		m.db.log.Warn("a miss could not be checked against the change log", zap.Error(cerr))
		return fmt.Errorf("%w: %w (%w)", pending.ErrUnavailable, cerr, err)
	}
	return nil
}

// CatchUp returns once the tailer has applied every change committed
// before the call, within CatchUpWait.
func (m *Mirror) CatchUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, CatchUpWait)
	defer cancel()
	// Every change committed before now was made by a transaction with an
	// id up to the highest one logged, or pruned since. Not the next id to
	// be handed out: that would also wait for transactions that change no
	// question.
	var next int64
	if err := m.db.ctl.QueryRow(ctx, "SELECT greatest((SELECT max(xid) + 1 FROM changes), (SELECT xid FROM log_pruned))").Scan(&next); err != nil {
		return unavailable("read the change log's position", err)
	}
	if err := m.tail.WaitFor(ctx, next); err != nil {
		return fmt.Errorf("catch up with the change log up to transaction %d: %w", next, err)
	}
	return nil
}

// Peek is the store's Get without catching up: what this replica holds
// now. For readers on the tail's side of the log (the tail's own Announce,
// or what it feeds), which must never wait for the tail.
func (m *Mirror) Peek(ctx context.Context, id string) (*pending.Question, error) {
	return m.Store.Get(ctx, id)
}
