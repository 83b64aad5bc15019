package pending

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// DefaultLockTimeout is how long OpenBolt waits for another process's lock
// on the file when BoltOptions.LockTimeout is zero.
const DefaultLockTimeout = time.Second

// batchDelay is how long a commit that found another one running waits for
// company before it starts. It is short because the wait for the running
// commit's fsync gathers most of the company anyway.
const batchDelay = time.Millisecond

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
// Commits that arrive while another is running are gathered into one
// transaction (bbolt's DB.Batch), so concurrent questions share an fsync; a
// commit that finds the file idle starts at once.
type Bolt struct {
	db   *bbolt.DB
	path string
	log  *zap.Logger

	writers atomic.Int32 // Put and Delete calls in progress
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
					return fmt.Errorf("%w: record %q: %w", ErrCorrupt, k, err)
				case q.ID != string(k):
					return fmt.Errorf("%w: record %q holds question %q", ErrCorrupt, k, q.ID)
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
				return fmt.Errorf("question %q: %w", q.ID, err)
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
				return fmt.Errorf("question %q: %w", id, err)
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

// write commits fn. Alone, it commits at once; when another write is in
// progress it joins a batch, which bbolt commits in one transaction once the
// batch is full or batchDelay has passed. fn may run more than once (bbolt
// retries a batch member alone when it fails), so it must be idempotent.
func (b *Bolt) write(fn func(*bbolt.Tx) error) error {
	defer b.writers.Add(-1)
	if b.writers.Add(1) == 1 {
		return b.db.Update(fn)
	}
	return b.db.Batch(fn)
}

// failed logs a failed operation and wraps its error with ErrUnavailable and
// the file's path.
func (b *Bolt) failed(op string, err error) error {
	b.log.Warn("question store failed", zap.String("path", b.path), zap.String("op", op), zap.Error(err))
	return fmt.Errorf("%s: %s: %w: %w", b.path, op, ErrUnavailable, err)
}
