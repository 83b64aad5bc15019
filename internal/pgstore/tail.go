package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
)

// Change kinds.
const (
	KindAsked = "asked"
	KindEnded = "ended"
)

// Change is one entry of the change log.
type Change struct {
	Seq  int64
	Kind string // KindAsked or KindEnded
	// Question is the question as the change left it: pending for
	// KindAsked, ended for KindEnded. Nil when its record has been deleted
	// (retention) since.
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
// order, exactly once, to its apply function.
type Tailer struct {
	s     *Store
	opts  TailOptions
	apply func(Change)

	cancel context.CancelFunc
	done   chan struct{}

	pruned time.Time // when this tailer last pruned the log

	mu   sync.Mutex
	last int64
	wake chan struct{} // closed and replaced whenever last moves
}

// Tail starts following the log after change number from (Journal.LoadedSeq
// for a store just restored), calling apply for each later change, in
// order, from one goroutine. apply must not call back into the tailer.
// Stop ends it.
func (s *Store) Tail(from int64, apply func(Change), opts TailOptions) *Tailer {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.KeepChanges <= 0 {
		opts.KeepChanges = DefaultKeepChanges
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tailer{s: s, opts: opts, apply: apply, cancel: cancel, done: make(chan struct{}), last: from, wake: make(chan struct{})}
	go t.run(ctx)
	return t
}

// Stop stops the tailer and waits for its goroutine (and any apply under
// way) to return.
func (t *Tailer) Stop() {
	t.cancel()
	<-t.done
}

// Last is the number of the last change applied.
func (t *Tailer) Last() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// WaitFor blocks until the change numbered seq has been applied, or ctx
// ends.
func (t *Tailer) WaitFor(ctx context.Context, seq int64) error {
	for {
		t.mu.Lock()
		last, wake := t.last, t.wake
		t.mu.Unlock()
		if last >= seq {
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
		if err := t.catchUp(ctx, conn.Conn()); err != nil {
			return err
		}
		up()
		if err := t.prune(ctx, conn.Conn()); err != nil {
			return err
		}
		wait, cancel := context.WithTimeout(ctx, t.opts.PollInterval)
		_, err := conn.Conn().WaitForNotification(wait)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// catchUp reads and applies changes after last until none are left.
func (t *Tailer) catchUp(ctx context.Context, conn *pgx.Conn) error {
	for {
		changes, head, err := t.read(ctx, conn)
		if err != nil {
			return err
		}
		last := t.Last()
		if gap := (len(changes) > 0 && changes[0].Seq != last+1) || (len(changes) == 0 && head > last); gap {
			if err := t.resync(ctx, last, head); err != nil {
				return err
			}
			continue
		}
		for _, c := range changes {
			t.apply(c)
			t.advance(c.Seq)
		}
		if len(changes) < t.opts.Batch {
			return nil
		}
	}
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

// resync handles changes after last that were pruned before this tailer
// read them.
func (t *Tailer) resync(ctx context.Context, last, head int64) error {
	if t.opts.Resync == nil {
		t.s.log.Error("change log: changes were pruned before they were read; skipped", zap.Int64("after", last), zap.Int64("head", head))
		// Skip to the oldest change still there (or the head).
		var oldest *int64
		if err := t.s.pool.QueryRow(ctx, "SELECT min(seq) FROM changes WHERE seq > $1", last).Scan(&oldest); err != nil {
			return err
		}
		if oldest != nil {
			t.advance(*oldest - 1)
		} else {
			t.advance(head)
		}
		return nil
	}
	t.s.log.Warn("change log: changes were pruned before they were read; resynchronising", zap.Int64("after", last), zap.Int64("head", head))
	seq, err := t.opts.Resync(ctx)
	if err != nil {
		return fmt.Errorf("resynchronising: %w", err)
	}
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
	tag, err := conn.Exec(ctx, "DELETE FROM changes WHERE at < now() - make_interval(secs => $1)", t.opts.KeepChanges.Seconds())
	if err != nil {
		return err
	}
	t.pruned = time.Now()
	if n := tag.RowsAffected(); n > 0 {
		t.s.log.Debug("change log pruned", zap.Int64("changes", n))
	}
	return nil
}

// read returns the next batch of changes after last, each with its
// question's record as it is now, cut back to what the change made it
// (without its ending, for an asked change), and the log's head as of the
// same snapshot, so that a gap left by pruning can be told.
func (t *Tailer) read(ctx context.Context, conn *pgx.Conn) ([]Change, int64, error) {
	rows, err := conn.Query(ctx, `
SELECT h.seq, c.seq, c.kind, c.question_id, c.record
FROM log_head h LEFT JOIN LATERAL (
	SELECT c.seq, c.kind, c.question_id, q.record::text AS record
	FROM changes c LEFT JOIN questions q ON q.id = c.question_id
	WHERE c.seq > $1 ORDER BY c.seq LIMIT $2
) c ON true
ORDER BY c.seq`, t.Last(), t.opts.Batch)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var changes []Change
	var head int64
	for rows.Next() {
		var seq *int64
		var kind, id, record *string
		if err := rows.Scan(&head, &seq, &kind, &id, &record); err != nil {
			return nil, 0, err
		}
		if seq == nil {
			continue // no changes: the one row carries the head
		}
		c := Change{Seq: *seq, Kind: *kind}
		if record != nil {
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
			return nil, 0, fmt.Errorf("change %d ends question %q, whose record is pending", c.Seq, *id)
		}
		changes = append(changes, c)
	}
	return changes, head, rows.Err()
}
