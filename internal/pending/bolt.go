package pending

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// DefaultLockTimeout is how long OpenBolt waits for another process's lock
// on the file when BoltOptions.LockTimeout is zero.
const DefaultLockTimeout = time.Second

// BoltOptions configure OpenBolt. Zero values mean the defaults.
type BoltOptions struct {
	// Logger gets warnings; nil means zap.NewNop().
	Logger *zap.Logger
	// LockTimeout is how long to wait for another process's lock on the
	// file before failing with ErrLocked. Default 1s.
	LockTimeout time.Duration
	// NoSync skips fsync, so a crash can lose or corrupt the file. For tests
	// and benchmarks only.
	NoSync bool

	// openFile replaces os.OpenFile, for tests that need a file that fails
	// to write even for root.
	openFile func(name string, flag int, perm os.FileMode) (*os.File, error)
}

// Bolt is the embedded Journal: one bbolt file holding a "questions" bucket
// (JSON records keyed by question id) and a "meta" bucket whose format marker
// tells a questiond file from any other.
//
// Writes that arrive while a commit runs are committed together in the next
// transaction (a group commit), so concurrent questions share an fsync, and
// a write that finds the file idle commits at once.
type Bolt struct {
	db     *bbolt.DB
	path   string
	opened os.FileInfo // the file at path when opened, for Ping
	log    *zap.Logger

	mu         sync.Mutex
	queue      []*write // writes waiting for the next commit
	committing bool     // a writer is committing, and will pass the lead on

	// onQueued is a test hook, always nil in production: called by every
	// write once it is queued, with no lock held.
	onQueued func()
}

// write is one Put or Delete waiting in the queue.
type write struct {
	apply func(*bbolt.Tx) error
	done  chan writeResult // one value: the result, or the lead first
}

type writeResult struct {
	err  error
	lead bool // commit the queue, then pass the lead on
}

var _ Journal = (*Bolt)(nil)

// Load returns every record in the file. A record that does not decode
// fails the load with an error wrapping ErrCorrupt: the file is left as it
// is for someone to look at.
func (b *Bolt) Load(ctx context.Context) ([]*Question, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load questions from %s: %w", b.path, err)
	}
	var qs []*Question
	err := guardCorruption(func() error {
		return b.db.View(func(tx *bbolt.Tx) error {
			bucket := tx.Bucket(bucketQuestions)
			if bucket == nil {
				return fmt.Errorf("%w: the %q bucket is missing", ErrCorrupt, bucketQuestions)
			}
			return bucket.ForEach(func(k, v []byte) error {
				q, err := decodeRecord(v)
				switch {
				case err != nil:
					return fmt.Errorf("%w: record %q: %w", ErrCorrupt, cutID(string(k)), err)
				case q.ID != string(k):
					return fmt.Errorf("%w: record %q holds question %q", ErrCorrupt, cutID(string(k)), cutID(q.ID))
				}
				qs = append(qs, q)
				return nil
			})
		})
	})
	if err != nil {
		return nil, b.failed("load questions", err)
	}
	return qs, nil
}

// Put writes the records of qs in one transaction, shared with any other
// Put or Delete running at the same time.
func (b *Bolt) Put(ctx context.Context, qs ...*Question) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store questions in %s: %w", b.path, err)
	}
	if len(qs) == 0 {
		return nil
	}
	records := make([][]byte, len(qs))
	for i, q := range qs {
		data, err := encodeRecord(q)
		if err != nil {
			return b.failed("store questions", err)
		}
		records[i] = data
	}
	err := b.write(func(tx *bbolt.Tx) error {
		bucket := tx.Bucket(bucketQuestions)
		for i, q := range qs {
			if err := bucket.Put([]byte(q.ID), records[i]); err != nil {
				return fmt.Errorf("question %q: %w", cutID(q.ID), err)
			}
		}
		return nil
	})
	if err != nil {
		return b.failed("store questions", err)
	}
	return nil
}

// Delete removes the records with these ids in one transaction, shared with
// any other Put or Delete running at the same time.
func (b *Bolt) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete questions from %s: %w", b.path, err)
	}
	if len(ids) == 0 {
		return nil
	}
	err := b.write(func(tx *bbolt.Tx) error {
		bucket := tx.Bucket(bucketQuestions)
		for _, id := range ids {
			if err := bucket.Delete([]byte(id)); err != nil {
				return fmt.Errorf("question %q: %w", cutID(id), err)
			}
		}
		return nil
	})
	if err != nil {
		return b.failed("delete questions", err)
	}
	return nil
}

// Close closes the file and releases its lock, after any commit in progress.
func (b *Bolt) Close() error {
	if err := b.db.Close(); err != nil {
		return b.failed("close", err)
	}
	return nil
}

// write commits apply, together with whatever other writes are queued.
//
// The writer that finds no commit running leads: it takes the whole queue,
// commits it in one transaction, tells every member its result, and hands
// the lead to the first writer that queued meanwhile, so no writer waits for
// more than the commit in progress and its own. A writer returns only once
// its write is committed or has failed, whatever its ctx does meanwhile.
func (b *Bolt) write(apply func(*bbolt.Tx) error) error {
	w := &write{apply: apply, done: make(chan writeResult, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	lead := !b.committing
	b.committing = true
	b.mu.Unlock()
	if hook := b.onQueued; hook != nil {
		hook()
	}
	if !lead {
		r := <-w.done
		if !r.lead {
			return r.err
		}
	}

	b.mu.Lock()
	group := b.queue
	b.queue = nil
	b.mu.Unlock()
	b.commit(group)
	b.mu.Lock()
	if len(b.queue) > 0 {
		b.queue[0].done <- writeResult{lead: true}
	} else {
		b.committing = false
	}
	b.mu.Unlock()
	return (<-w.done).err
}

// commit applies group's writes in one transaction and sends each its
// result. A write whose apply fails is taken out and told so, and the rest
// are committed without it; a failed commit fails them all.
func (b *Bolt) commit(group []*write) {
	for len(group) > 0 {
		failed := -1
		err := guardCorruption(func() error {
			return b.db.Update(func(tx *bbolt.Tx) error {
				for i, w := range group {
					if err := w.apply(tx); err != nil {
						failed = i
						return err
					}
				}
				return nil
			})
		})
		if failed >= 0 {
			group[failed].done <- writeResult{err: err}
			group = slices.Delete(group, failed, failed+1)
			continue
		}
		for _, w := range group {
			w.done <- writeResult{err: err}
		}
		return
	}
}

// failed logs a failed operation and wraps its error with ErrUnavailable and
// the file's path.
func (b *Bolt) failed(op string, err error) error {
	b.log.Warn("question store failed", zap.String("path", b.path), zap.String("op", op), zap.Error(err))
	return fmt.Errorf("%s: %s: %w: %w", b.path, op, ErrUnavailable, err)
}

// cutID shortens an id for an error message; a key bbolt refuses for its
// length is too long to quote whole.
func cutID(id string) string {
	const limit = 64
	if len(id) <= limit {
		return id
	}
	return id[:limit] + "…"
}
