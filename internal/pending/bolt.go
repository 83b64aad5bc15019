package pending

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
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
	// NoSync skips every sync, of the database and of its write-ahead log,
	// so a crash can lose or corrupt both. For tests and benchmarks only.
	NoSync bool

	// walSegment and idleCheckpoint replace defaultWALSegment and
	// defaultIdleCheckpoint, for tests.
	walSegment     int64
	idleCheckpoint time.Duration

	// openFile replaces os.OpenFile, for tests that need a file that fails
	// to write even for root.
	openFile func(name string, flag int, perm os.FileMode) (*os.File, error)
}

// Bolt is the embedded Journal: one bbolt file holding a "questions" bucket
// (JSON records keyed by question id) and a "meta" bucket whose format marker
// tells a questiond file from any other, with a write-ahead log beside it.
//
// Writes that arrive while a commit runs are committed together in the next
// group (a group commit), and a write that finds the store idle commits at
// once. A group commit appends one frame to the write-ahead log and syncs
// it once; a bbolt transaction would sync twice. A checkpointer applies the
// log to the database in the background, and OpenBolt replays it.
type Bolt struct {
	db       *bbolt.DB
	path     string
	opened   os.FileInfo // the file at path when opened, for Ping
	log      *zap.Logger
	noSync   bool
	openFile func(name string, flag int, perm os.FileMode) (*os.File, error)

	mu         sync.Mutex
	queue      []*write // writes waiting for the next commit
	committing bool     // a writer is committing, and will pass the lead on
	closed     bool

	// commitMu is held by the leader while it commits; Close and the
	// idle checkpointer take it to keep the log still.
	commitMu sync.Mutex
	commits  atomic.Int64 // group commits so far
	// The log, written by whoever holds commitMu. walMu guards each
	// segment's ops and sealed, active, broken, ckErr and commitErr.
	walSize int64
	segs    [2]*walSegment // nil until the first commit
	active  int
	epoch   uint64 // the highest epoch written or found
	walMu   sync.Mutex
	walCond *sync.Cond // signalled when a checkpoint ends
	broken  error      // the last frame failed to write or sync
	ckMu    sync.Mutex // one checkpoint at a time
	ckErr   error      // the last background checkpoint failed
	// commitErr is the last commit's failure (the log could not be created,
	// had no room, or failed to write), nil once one succeeds: readiness
	// reports it, and the checkpointer retries making the log ready.
	commitErr error
	ckKick    chan struct{}
	ckStop    chan struct{}
	ckDone    chan struct{}
	idle      time.Duration

	// onQueued is a test hook, always nil in production: called by every
	// write once it is queued, with no lock held.
	onQueued func()
	// onCheckpoint is a test hook, always nil in production: called before
	// each background checkpoint, which fails with its error.
	onCheckpoint func() error
}

// write is one Put or Delete waiting in the queue, or a Load's request to
// checkpoint the log first.
type write struct {
	ops   []walOp
	flush bool
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
	if err := b.write(nil, true); err != nil {
		return nil, b.failed("load questions", err)
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
	ops := make([]walOp, len(qs))
	for i, q := range qs {
		data, err := encodeRecord(q)
		if err != nil {
			return b.failed("store questions", err)
		}
		ops[i] = walOp{bucket: bucketQuestions, key: []byte(q.ID), value: data}
	}
	if err := b.write(ops, false); err != nil {
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
	ops := make([]walOp, len(ids))
	for i, id := range ids {
		ops[i] = walOp{bucket: bucketQuestions, key: []byte(id), del: true}
	}
	if err := b.write(ops, false); err != nil {
		return b.failed("delete questions", err)
	}
	return nil
}

// Close waits for the commit in progress, applies the write-ahead log to the
// database and removes it, then closes the file and releases its lock.
// Writes that have not begun to commit fail.
func (b *Bolt) Close() error {
	b.mu.Lock()
	already := b.closed
	b.closed = true
	b.mu.Unlock()
	if already {
		return nil
	}
	// The lead first: a commit in progress may be waiting for the
	// checkpointer to free a segment.
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	close(b.ckStop)
	<-b.ckDone
	err := b.closeLog()
	if cerr := b.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return b.failed("close", err)
	}
	return nil
}

// write commits ops (and, with flush, then applies the whole log to the
// database), together with whatever other writes are queued.
//
// The writer that finds no commit running leads: it takes the whole queue,
// commits it in one transaction, tells every member its result, and hands
// the lead to the first writer that queued meanwhile, so no writer waits for
// more than the commit in progress and its own. A writer returns only once
// its write is committed or has failed, whatever its ctx does meanwhile.
func (b *Bolt) write(ops []walOp, flush bool) error {
	w := &write{ops: ops, flush: flush, done: make(chan writeResult, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errClosed
	}
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

// failed logs a failed operation and wraps its error with ErrUnavailable and
// the file's path; answers to callers name the store (FailedStore) but not
// the path, which is the server's business.
func (b *Bolt) failed(op string, err error) error {
	b.log.Warn("question store failed", zap.String("path", b.path), zap.String("op", op), zap.Error(err))
	return boltFailure{fmt.Errorf("%s: %s: %w: %w", b.path, op, ErrUnavailable, err)}
}

// boltFailure is a failure of the bbolt file, named as operators know it.
type boltFailure struct{ error }

func (e boltFailure) Unwrap() error { return e.error }

// FailedStore names the store for FailedStore.
func (boltFailure) FailedStore() string { return "The bbolt store in --data-dir" }

// cutID shortens an id for an error message; a key bbolt refuses for its
// length is too long to quote whole.
func cutID(id string) string {
	const limit = 64
	if len(id) <= limit {
		return id
	}
	return id[:limit] + "…"
}
