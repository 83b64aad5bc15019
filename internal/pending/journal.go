package pending

import (
	"context"
	"errors"
	"fmt"
)

// Journal persists question records. When a store has one, the durable
// record is the source of truth for what is pending and how each question
// ended: the store commits a change to the journal before it acknowledges
// it, and a restarted store is rebuilt from the journal by [Open].
//
// [Bolt] is the embedded implementation; a networked backend (Redis, shared by
// several replicas) can implement the same four methods, and Pinger so that
// readiness probes see it fail.
type Journal interface {
	// Load returns every stored record, pending and ended, in any order.
	Load(ctx context.Context) ([]*Question, error)
	// Put creates or overwrites the records of qs (keyed by ID) and returns
	// only once they are committed. It must not keep or change qs.
	Put(ctx context.Context, qs ...*Question) error
	// Delete forgets the records with these ids; unknown ids are ignored.
	Delete(ctx context.Context, ids ...string) error
	// Close releases the journal; later calls fail.
	Close() error
}

// KeyJournal is a Journal that also stores the Idempotency-Keys of
// forgotten questions (see GoneKey), so that they outlive a restart. A
// store whose journal is not one remembers them in memory only.
type KeyJournal interface {
	Journal
	// Forget deletes the records with ids, stores keep and deletes drop
	// (both keyed by Owner and Key), all in one commit.
	Forget(ctx context.Context, ids []string, keep, drop []GoneKey) error
	// LoadGone returns every stored GoneKey, in any order.
	LoadGone(ctx context.Context) ([]GoneKey, error)
}

// forgetRecords deletes the records with ids and, when the journal keeps
// them, stores keep and deletes drop in the same commit.
func forgetRecords(ctx context.Context, j Journal, ids []string, keep, drop []GoneKey) error {
	if kj, ok := j.(KeyJournal); ok {
		if len(ids) == 0 && len(keep) == 0 && len(drop) == 0 {
			return nil
		}
		return kj.Forget(ctx, ids, keep, drop)
	}
	if len(ids) == 0 {
		return nil
	}
	return j.Delete(ctx, ids...)
}

// ErrUnavailable says the journal failed (disk full, read-only file system,
// I/O error, unreachable server). Every journal error wraps it, except a
// context error for a ctx that ended before the operation started. A failed
// operation changes nothing, in the journal or in the store.
var ErrUnavailable = errors.New("question store unavailable")

// A journal shared by several stores (replicas) refuses what a rival
// committed first: a Put of a creation whose id or Idempotency-Key a live
// question holds fails with an error wrapping ErrExists, and a Put of an
// ending of a question that has already ended with one wrapping ErrNotFound.
// Nothing is written then, and the store answers as it would had it seen the
// rival's change: the same ErrExists or ErrNotFound. It may also refuse a
// creation beyond a cluster-wide limit (ErrFull).

// journalError makes sure an error from a Journal wraps ErrUnavailable, so
// callers can rely on it whatever the implementation did; a rival's win
// (ErrExists, ErrNotFound) passes through as it is.
func journalError(err error) error {
	if errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrFull) {
		return err
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
