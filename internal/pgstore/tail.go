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
}

// Tailer follows the change log from a position and hands each change, in
// order, exactly once, to its apply function.
type Tailer struct {
	s     *Store
	opts  TailOptions
	apply func(Change)

	cancel context.CancelFunc
	done   chan struct{}

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
			return errors.New("tailer stopped")
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
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	for {
		if err := t.catchUp(ctx, conn.Conn()); err != nil {
			return err
		}
		up()
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
		changes, err := t.read(ctx, conn)
		if err != nil {
			return err
		}
		for _, c := range changes {
			t.apply(c)
			t.mu.Lock()
			t.last = c.Seq
			close(t.wake)
			t.wake = make(chan struct{})
			t.mu.Unlock()
		}
		if len(changes) < t.opts.Batch {
			return nil
		}
	}
}

// read returns the next batch of changes after last, each with its
// question's record as it is now, cut back to what the change made it:
// without its ending for an asked change.
func (t *Tailer) read(ctx context.Context, conn *pgx.Conn) ([]Change, error) {
	rows, err := conn.Query(ctx, `
SELECT c.seq, c.kind, c.question_id, q.record::text
FROM changes c LEFT JOIN questions q ON q.id = c.question_id
WHERE c.seq > $1 ORDER BY c.seq LIMIT $2`, t.Last(), t.opts.Batch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var changes []Change
	for rows.Next() {
		var c Change
		var id string
		var record *string
		if err := rows.Scan(&c.Seq, &c.Kind, &id, &record); err != nil {
			return nil, err
		}
		if record != nil {
			q, err := pending.DecodeRecord([]byte(*record))
			if err != nil {
				// A record this replica cannot read is skipped, loudly;
				// the log must not stall on it.
				t.s.log.Error("change log: question record does not decode; skipped", zap.Int64("seq", c.Seq), zap.String("id", id), zap.Error(err))
			} else {
				c.Question = q
			}
		}
		if c.Question != nil && c.Kind == KindAsked {
			c.Question.Ended = nil
		}
		if c.Question != nil && c.Kind == KindEnded && c.Question.Ended == nil {
			return nil, fmt.Errorf("change %d ends question %q, whose record is pending", c.Seq, id)
		}
		changes = append(changes, c)
	}
	return changes, rows.Err()
}
