package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/defaults"
	"github.com/questiond/questiond/internal/pending"
)

// Change kinds.
const (
	KindAsked = "asked"
	KindEnded = "ended"
	// KindForgot: the question's record was deleted (retention, or an
	// eviction to keep within a bound or a byte budget), and its result
	// is forgotten.
	KindForgot = "forgot"
)

// safeSQL is the log position every tailer may read up to: the oldest
// transaction id still running when the statement's snapshot was taken
// (see the package doc). As SQL, to be read in the snapshot it is about.
const safeSQL = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"

// Change is one entry of the change log. The log's order is (Xid, Seq):
// the same on every replica, each change's question asked before it ends.
type Change struct {
	// Seq numbers the change, uniquely and in order within its
	// transaction; numbers are not consecutive, and do not grow along the
	// log across transactions.
	Seq int64
	// Xid is the id of the transaction that made the change.
	Xid  int64
	Kind string // KindAsked, KindEnded or KindForgot
	// ID is the question's id, there even when its record is not.
	ID string
	// Question is the question as the change left it: pending for
	// KindAsked, ended for KindEnded. Nil when its record has been deleted
	// (retention) since, and for KindForgot.
	Question *pending.Question
}

// Defaults for TailOptions.
const (
	DefaultPollInterval = time.Second
	DefaultBatch        = 500
	DefaultMaxBackoff   = 10 * time.Second
	DefaultKeepChanges  = 24 * time.Hour
)

// TailOptions configure Tail. Zero values mean the defaults.
type TailOptions struct {
	// PollInterval is how often the tailer reads the log when no
	// notification woke it, in case one was lost.
	PollInterval time.Duration
	// Batch is how many changes one read takes.
	Batch int
	// MaxBackoff caps the wait between reconnection attempts.
	MaxBackoff time.Duration
	// KeepChanges is how long changes stay in the log: every replica's
	// tailer deletes older ones now and then. A tailer that fell further
	// behind (a replica cut off from the database for longer) finds a gap
	// and resynchronises. Default 24h.
	KeepChanges time.Duration
	// Resync, if set, is called when the changes after the tailer's
	// position have been pruned: it brings the follower up to date some
	// other way (a full read) and returns the change number that covers.
	// Without it the gap is logged and skipped.
	Resync func(ctx context.Context) (int64, error)
	// Announce, used by Follow only, is told of every change of the log,
	// this replica's own included, in the log's order, once the mirror has
	// applied it: a replica that publishes its events from here publishes
	// them in the same order as every other replica. Changes a resync
	// skipped over are told as the resync applies them, creations first.
	Announce func(*pending.Question)
}

// ErrStopped: the tailer was stopped before it reached the change waited for.
var ErrStopped = errors.New("change log tailer stopped")

// TailerApplicationName is the application_name of a tailer's connection.
const TailerApplicationName = "questiond change log tailer"

// Tailer follows the change log from a position and hands each change, in
// order, exactly once, to its apply function. A position is a transaction
// id: every change made by a transaction with a lower id has been handed
// over (or was part of what the position was taken from).
type Tailer struct {
	s     *DB
	opts  TailOptions
	apply func(Change)

	cancel context.CancelFunc
	done   chan struct{}

	pruned time.Time // when this tailer last pruned the log

	mu   sync.Mutex
	last int64
	// resume is where a read starts after a lost connection: one past the
	// last transaction handed over (or the position given to Tail). last
	// may be ahead of it, at an id no change was made by; after a crash
	// the server may hand such ids out again (see the package doc).
	resume int64
	want   int64              // the furthest position WaitFor is waiting for
	kicked bool               // want moved since the last read began
	wake   chan struct{}      // closed and replaced whenever last moves
	listen context.CancelFunc // cuts short the wait for a notification
}

// Tail starts following the log from position from (Journal.LoadedSeq
// for a store just restored, 0 for the whole log), calling apply for each later change, in
// order, from one goroutine. apply must not call back into the tailer.
// Stop ends it.
func (s *DB) Tail(from int64, apply func(Change), opts TailOptions) *Tailer {
	defaults.Fill(&opts.PollInterval, DefaultPollInterval)
	defaults.Fill(&opts.Batch, DefaultBatch)
	defaults.Fill(&opts.MaxBackoff, DefaultMaxBackoff)
	defaults.Fill(&opts.KeepChanges, DefaultKeepChanges)
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tailer{s: s, opts: opts, apply: apply, cancel: cancel, done: make(chan struct{}), last: from, resume: from, wake: make(chan struct{})}
	go t.run(ctx)
	return t
}

// Stop stops the tailer and waits for its goroutine (and any apply under
// way) to return.
func (t *Tailer) Stop() {
	t.cancel()
	<-t.done
}

// Last is the tailer's position: every change of a transaction with a
// lower id has been applied.
func (t *Tailer) Last() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// WaitFor blocks until the tailer's position reaches pos, or ctx ends. It
// makes the tailer read at once, and again every few milliseconds while
// transactions below pos are still running.
func (t *Tailer) WaitFor(ctx context.Context, pos int64) error {
	for {
		t.mu.Lock()
		last, wake := t.last, t.wake
		if last < pos && pos > t.want {
			t.want, t.kicked = pos, true
			if t.listen != nil {
				t.listen()
			}
		}
		t.mu.Unlock()
		if last >= pos {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.done:
			return ErrStopped
		}
	}
}

func (t *Tailer) run(ctx context.Context) {
	defer close(t.done)
	backoff := 100 * time.Millisecond
	down := false
	for ctx.Err() == nil {
		err := t.follow(ctx, func() {
			if down {
				t.s.log.Info("change log reachable again; caught up", zap.Int64("seq", t.Last()))
				down = false
			}
			backoff = 100 * time.Millisecond
		})
		if ctx.Err() != nil {
			return
		}
		t.rewind()
		if !down {
			// Once per outage, not once per attempt.
			t.s.log.Warn("change log unreachable; reconnecting with backoff", zap.Int64("seq", t.Last()), zap.Error(redact(err)))
			down = true
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, t.opts.MaxBackoff)
	}
}

// follow holds one connection: LISTEN, catch up, then read again at every
// notification or poll tick, until the connection fails. up is called
// after each successful catch-up.
func (t *Tailer) follow(ctx context.Context, up func()) error {
	conn, err := t.s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// A connection that failed mid-wait may be unusable; pgxpool drops
		// closed ones, and a LISTENing one must not serve queries.
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}()
	// Named, so that operators (and tests) can tell it in pg_stat_activity;
	// the connection is closed afterwards, never returned to the pool.
	if _, err := conn.Exec(ctx, "SET application_name = '"+TailerApplicationName+"'"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	for {
		inflight, err := t.catchUp(ctx, conn.Conn())
		if err != nil {
			return err
		}
		up()
		if err := t.prune(ctx, conn.Conn()); err != nil {
			return err
		}
		wait, cancel := context.WithTimeout(ctx, t.pause(inflight))
		t.mu.Lock()
		t.listen = cancel
		if t.kicked {
			cancel() // a WaitFor came in during the read
		}
		t.mu.Unlock()
		_, err = conn.Conn().WaitForNotification(wait)
		cancel()
		if err == nil {
			drainNotifications(conn.Conn())
		}
		t.mu.Lock()
		t.listen = nil
		t.mu.Unlock()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// drainNotifications takes the notifications the connection has received
// already (during the last read, most of them): the read about to begin
// covers every change committed before it, so it answers them all. Under
// load every replica notifies after nearly every commit, and a read per
// notification would make the tailers read, mostly nothing, several times
// per change.
func drainNotifications(conn *pgx.Conn) {
	// A done context takes only what is buffered: no I/O, the connection
	// stays usable.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		if _, err := conn.WaitForNotification(done); err != nil {
			return
		}
	}
}

// pause is how long the tailer waits for a notification before it reads
// again: the poll interval, or a few milliseconds while a transaction it
// could not read past yet is running and a WaitFor waits for it (that
// transaction may end without a notification: it may fail, or not be a
// change at all).
func (t *Tailer) pause(inflight bool) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if inflight && t.want > t.last {
		return min(t.opts.PollInterval, 5*time.Millisecond)
	}
	return t.opts.PollInterval
}

// catchUp reads and applies changes until it has read up to where it may;
// inflight says that transactions it could not read past were running.
func (t *Tailer) catchUp(ctx context.Context, conn *pgx.Conn) (inflight bool, err error) {
	for {
		t.mu.Lock()
		last := t.last
		t.kicked = false
		t.mu.Unlock()
		b, err := t.read(ctx, conn, last)
		if err != nil {
			return false, err
		}
		if b.pruned > last {
			if err := t.resync(ctx, last, b.pruned); err != nil {
				return false, err
			}
			continue
		}
		for _, c := range b.changes {
			t.apply(c)
		}
		if n := len(b.changes); n > 0 {
			t.mu.Lock()
			t.resume = b.changes[n-1].Xid + 1
			t.mu.Unlock()
		}
		t.advance(b.upto)
		if !b.more {
			return b.inflight, nil
		}
	}
}

// rewind takes the position back to where the last handed-over
// transaction ends, once the connection is lost: the server may have
// crashed and restarted, and then hands out again the ids of transactions
// whose commits never reached its disk (an aborted writer's, a
// notification's), ids the position may have passed. Until the next read,
// WaitFor does not take such an id for one already read. Nothing is handed
// over twice: no change was made by a transaction between resume and the
// old position, or the reads that moved it would have handed it over.
func (t *Tailer) rewind() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = min(t.last, t.resume)
}

// advance moves the position to seq and wakes WaitFor.
func (t *Tailer) advance(seq int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq > t.last {
		t.last = seq
		close(t.wake)
		t.wake = make(chan struct{})
	}
}

// resync handles changes from position last on that may have been pruned
// before this tailer read them (pruning deleted changes below pruned).
func (t *Tailer) resync(ctx context.Context, last, pruned int64) error {
	if t.opts.Resync == nil {
		t.s.log.Error("change log: changes were pruned before they were read; skipped", zap.Int64("after", last), zap.Int64("pruned", pruned))
		t.mu.Lock()
		t.resume = max(t.resume, pruned)
		t.mu.Unlock()
		t.advance(pruned)
		return nil
	}
	t.s.log.Warn("change log: changes were pruned before they were read; resynchronising", zap.Int64("after", last), zap.Int64("pruned", pruned))
	seq, err := t.opts.Resync(ctx)
	if err != nil {
		return fmt.Errorf("resynchronising: %w", err)
	}
	t.mu.Lock()
	t.resume = max(t.resume, seq)
	t.mu.Unlock()
	t.advance(seq)
	return nil
}

// prune deletes changes older than KeepChanges, at most once every tenth
// of that. Every replica does it; deleting what another already deleted
// costs nothing.
func (t *Tailer) prune(ctx context.Context, conn *pgx.Conn) error {
	if time.Since(t.pruned) < t.opts.KeepChanges/10 {
		return nil
	}
	// The highest id pruned is recorded in the same statement, so that a
	// tailer still below it knows to resynchronise.
	var n int64
	err := conn.QueryRow(ctx, `
WITH d AS (DELETE FROM changes WHERE at < now() - make_interval(secs => $1) RETURNING xid),
u AS (UPDATE log_pruned SET xid = greatest(xid, (SELECT max(xid) + 1 FROM d)) WHERE EXISTS (SELECT FROM d))
SELECT count(*) FROM d`, t.opts.KeepChanges.Seconds()).Scan(&n)
	if err != nil {
		return err
	}
	t.pruned = time.Now()
	if n > 0 {
		t.s.log.Debug("change log pruned", zap.Int64("changes", n))
	}
	return nil
}

// batch is what one read of the log returns.
type batch struct {
	changes []Change
	upto    int64 // the position after these changes
	more    bool  // there are more changes below the safe position
	// inflight: a transaction that began before the read was still
	// running, so the safe position is below the latest one.
	inflight bool
	pruned   int64 // changes below this may have been pruned
}

// readSQL is read's statement: $1 the position, $2 the batch size. Each
// change's record is looked up by its key, one index probe per change: as
// a join, the plan PostgreSQL caches for the prepared statement (whose
// estimate of the range's rows cannot see $1) hashed the whole questions
// table on every read that found changes, ended questions included, a
// cost that grew with the table until retention deleted them.
const readSQL = `
WITH s AS (
	SELECT ` + safeSQL + ` AS safe, pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next
), b AS (
	SELECT greatest($1, CASE WHEN cut.xid IS NULL THEN s.safe ELSE greatest(cut.xid, $1 + 1) END) AS upto,
		cut.xid IS NOT NULL AS more, s.safe < s.next AS inflight,
		(SELECT xid FROM log_pruned) AS pruned
	FROM s LEFT JOIN LATERAL (
		SELECT xid FROM changes WHERE xid >= $1 AND xid < s.safe ORDER BY xid, seq OFFSET $2 LIMIT 1
	) cut ON true
)
SELECT b.upto, b.more, b.inflight, b.pruned, c.seq, c.xid, c.kind, c.question_id,
	(SELECT q.record::text FROM questions q WHERE q.id = c.question_id)
FROM b LEFT JOIN LATERAL (
	SELECT c.seq, c.xid, c.kind, c.question_id FROM changes c WHERE c.xid >= $1 AND c.xid < b.upto
) c ON true
ORDER BY c.xid, c.seq`

// read returns the changes of the transactions from position from up to a
// position no running transaction is below (the safe one), at most about
// Batch of them (whole transactions), in the log's order, each with its
// question's record as it is now, cut back to what the change made it
// (without its ending, for an asked change). One statement, so one
// snapshot: every change of a transaction below the safe position has
// committed, or never will (see the package doc).
func (t *Tailer) read(ctx context.Context, conn *pgx.Conn, from int64) (batch, error) {
	rows, err := conn.Query(ctx, readSQL, from, t.opts.Batch)
	if err != nil {
		return batch{}, err
	}
	defer rows.Close()
	var b batch
	for rows.Next() {
		var seq, xid *int64
		var kind, id, record *string
		if err := rows.Scan(&b.upto, &b.more, &b.inflight, &b.pruned, &seq, &xid, &kind, &id, &record); err != nil {
			return batch{}, err
		}
		if seq == nil {
			continue // no changes: the one row carries the position
		}
		c := Change{Seq: *seq, Xid: *xid, Kind: *kind, ID: *id}
		if record != nil && c.Kind != KindForgot {
			q, err := pending.DecodeRecord([]byte(*record))
			if err != nil {
				// A record this replica cannot read is skipped, loudly;
				// the log must not stall on it.
				t.s.log.Error("change log: question record does not decode; skipped", zap.Int64("seq", c.Seq), zap.String("id", *id), zap.Error(err))
			} else {
				c.Question = q
			}
		}
		if c.Question != nil && c.Kind == KindAsked {
			c.Question.Ended = nil
		}
		if c.Question != nil && c.Kind == KindEnded && c.Question.Ended == nil {
			return batch{}, fmt.Errorf("change %d ends question %q, whose record is pending", c.Seq, *id)
		}
		b.changes = append(b.changes, c)
	}
	return b, rows.Err()
}
