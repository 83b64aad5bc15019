package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
)

// notifySQL announces the change log's new changes, in a transaction that
// does not wait for the disk (see the package doc).
const notifySQL = "SELECT set_config('synchronous_commit', 'off', true), pg_notify('" + channel + "', '')"

// applySQL commits a batch of creations and endings (migration 7): a row
// per item, its change's number (0 if refused) and why it was refused,
// with the transaction's id.
const applySQL = "SELECT out_item, out_seq, out_refused, pg_current_xact_id()::text::bigint FROM questiond_apply($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"

// maxBatch bounds the changes one call of questiond_apply commits.
const maxBatch = 256

// Why questiond_apply refused an item.
const (
	refusedTaken      = 1 // the id, or a live question's Idempotency-Key
	refusedTotal      = 2 // the limit of pending questions
	refusedOwner      = 3 // the agent's limit of pending questions
	refusedNotPending = 4 // an ending of a question that has ended, or is gone
	refusedBytes      = 5 // the total byte budget (seq: the bytes held)
	refusedAgentBytes = 6 // the agent's byte budget (seq: the bytes it holds)
)

// batcher gathers the creations and endings of a store's journals that
// arrive while a batch is being committed into the next one: the first
// writer that finds none under way leads, commits what is queued in one
// call and one transaction, tells every member its outcome and hands the
// lead to the first that queued meanwhile (as pending.Bolt's group
// commit). Under load a round trip, a commit and a notification serve
// many changes; a lone change goes at once.
type batcher struct {
	mu      sync.Mutex
	queue   []*queuedChange
	leading bool
}

type queuedChange struct {
	j      *Journal
	q      *pending.Question
	record string
	done   chan changeOutcome // buffered: one outcome, or the lead
}

type changeOutcome struct {
	seq, xid int64
	refused  int
	err      error
	lead     bool
}

// putBatched commits q's change together with whatever other changes are
// queued, and returns its outcome as put does.
func (j *Journal) putBatched(ctx context.Context, q *pending.Question) error {
	record, err := pending.EncodeRecord(q)
	if err != nil {
		return fmt.Errorf("%w: %w", pending.ErrInvalid, err)
	}
	b := &j.s.batches
	c := &queuedChange{j: j, q: q, record: string(record), done: make(chan changeOutcome, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.leading
	b.leading = true
	b.mu.Unlock()
	if !lead {
		o := <-c.done
		if !o.lead {
			return j.outcome(q, o)
		}
	}
	b.mu.Lock()
	group := b.queue[:min(len(b.queue), maxBatch)]
	b.queue = b.queue[len(group):]
	b.mu.Unlock()
	j.s.commitBatch(ctx, group)
	b.mu.Lock()
	if len(b.queue) > 0 {
		b.queue[0].done <- changeOutcome{lead: true}
	} else {
		b.leading = false
	}
	b.mu.Unlock()
	return j.outcome(q, <-c.done)
}

// outcome turns a batch member's outcome into put's answer.
func (j *Journal) outcome(q *pending.Question, o changeOutcome) error {
	switch o.refused {
	case refusedTotal:
		return fmt.Errorf("create question %q: questiond holds %d pending questions, its limit: %w", q.ID, j.s.opts.MaxPending, pending.ErrFull)
	case refusedOwner:
		return fmt.Errorf("create question %q: agent %q has %d pending questions, its limit: %w", q.ID, q.Owner, j.s.opts.MaxPendingPerAgent, pending.ErrFull)
	case refusedBytes, refusedAgentBytes:
		budget := &pending.BudgetError{Budget: pending.BudgetTotal, Agent: q.Owner, Limit: j.s.maxBytes(), Held: o.seq, Need: pending.Weigh(q)}
		if o.refused == refusedAgentBytes {
			budget.Budget, budget.Limit = pending.BudgetAgent, j.s.maxBytesPerAgent()
		}
		return fmt.Errorf("create question %q: %w: %w", q.ID, budget, pending.ErrFull)
	case refusedTaken:
		return fmt.Errorf("create question %q: the id, or the idempotency key, is taken: %w", q.ID, pending.ErrExists)
	}
	return j.changed(q, o.seq, o.xid, o.err)
}

// batchRetries bounds how often a batch that lost a deadlock (to a
// replica upgrading from the one-change functions, two asks wrapping
// around full stripes, a creation forgetting results another replica is
// deleting) or that met a result being deleted (40001, migration 10) is
// sent again, a few milliseconds later; it was rolled back whole.
const batchRetries = 4

// commitBatch commits group's changes in one transaction and sends each
// member its outcome.
func (s *DB) commitBatch(ctx context.Context, group []*queuedChange) {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	var outcomes []changeOutcome
	var err error
	for attempt := 1; ; attempt++ {
		outcomes, err = s.applyBatch(ctx, group)
		var pgErr *pgconn.PgError
		if attempt < batchRetries && errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001") {
			s.log.Debug("a batch of changes lost a deadlock; sending it again", zap.Int("changes", len(group)), zap.String("code", pgErr.Code))
			time.Sleep(time.Duration(attempt) * 5 * time.Millisecond) // for the rival to commit
			continue
		}
		break
	}
	for i, c := range group {
		if err != nil {
			c.done <- changeOutcome{err: err}
			continue
		}
		c.done <- outcomes[i]
	}
}

// applyBatch sends group to questiond_apply and, in the same write to the
// server, a notification in a transaction of its own that the server runs
// once the batch has committed (see the package doc), unless every
// request connection is taken: then the notifier sends it.
func (s *DB) applyBatch(ctx context.Context, group []*queuedChange) ([]changeOutcome, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		s.announce()
		return nil, err
	}
	defer conn.Release()
	st := s.pool.Stat()
	notifying := st.AcquiredConns() < st.MaxConns()
	if !notifying {
		defer s.announce()
	}
	statement, err := conn.Conn().Prepare(ctx, "questiond_apply", applySQL)
	if err != nil {
		return nil, err
	}
	n := len(group)
	ids, records, owners, keys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	created, ended := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
	weights := make([]int64, n)
	for i, c := range group {
		ids[i], records[i], owners[i], keys[i] = c.q.ID, c.record, c.q.Owner, c.q.IdempotencyKey
		weights[i] = pending.Weigh(c.q)
		created[i] = pgtype.Timestamptz{Time: c.q.CreatedAt, Valid: true}
		if c.q.Ended != nil {
			ended[i] = pgtype.Timestamptz{Time: c.q.Ended.At, Valid: true}
		}
	}
	args := []any{ids, records, owners, keys, created, ended, int64(s.opts.MaxPending), int64(s.opts.MaxPendingPerAgent),
		weights, s.maxBytes(), s.maxBytesPerAgent(), pgtype.Timestamptz{Time: time.Now().Add(s.keyRetention()), Valid: true}}
	types := conn.Conn().TypeMap()
	params, formats := make([][]byte, len(args)), make([]int16, len(args))
	for i, a := range args {
		oid := statement.ParamOIDs[i]
		formats[i] = types.FormatCodeForOID(oid)
		if params[i], err = types.Encode(oid, formats[i], a, nil); err != nil {
			return nil, fmt.Errorf("encoding a batch's parameter %d: %w", i+1, err)
		}
	}
	p := conn.Conn().PgConn().StartPipeline(ctx)
	p.SendQueryStatement(statement, params, formats, nil)
	p.SendPipelineSync() // the batch's transaction commits here
	if notifying {
		p.SendQueryParams(notifySQL, nil, nil, nil, nil)
		p.SendPipelineSync()
	}
	if err := p.Flush(); err != nil {
		_ = p.Close()
		s.announce() // the batch's outcome is unknown to the tailers too
		return nil, err
	}
	outcomes, err := batchCommitted(p, n)
	if cerr := p.Close(); cerr != nil {
		// The notification (or, with err, the batch too) failed: the
		// notifier sends one more, for the changes or for the tailers
		// their transaction held back.
		s.announce()
		s.log.Debug("change log notification not sent with the changes", zap.Error(redact(cerr)))
	}
	return outcomes, err
}

// batchCommitted reads a batch's rows and then its transaction's end: the
// changes are committed only once the server is past the first Sync.
func batchCommitted(p *pgconn.Pipeline, n int) ([]changeOutcome, error) {
	res, err := p.GetResults()
	if err != nil {
		return nil, err
	}
	rows, ok := res.(*pgconn.ResultReader)
	if !ok {
		return nil, fmt.Errorf("pipeline: %T where the batch's result was due", res)
	}
	outcomes := make([]changeOutcome, n)
	seen := 0
	var bad error
	for rows.NextRow() {
		v := rows.Values()
		var item, seq, refused, xid int64
		var perr error
		if len(v) == 4 {
			item, perr = strconv.ParseInt(string(v[0]), 10, 64)
			seq, perr = parseAlso(perr, v[1])
			refused, perr = parseAlso(perr, v[2])
			xid, perr = parseAlso(perr, v[3])
		}
		if len(v) != 4 || perr != nil || item < 1 || item > int64(n) {
			bad = fmt.Errorf("a batch's row does not read as four numbers: %q (%v)", v, perr)
			continue
		}
		outcomes[item-1] = changeOutcome{seq: seq, xid: xid, refused: int(refused)}
		seen++
	}
	if _, err := rows.Close(); err != nil {
		return nil, err
	}
	if bad == nil && seen != n {
		bad = fmt.Errorf("a batch of %d changes answered %d rows", n, seen)
	}
	if bad != nil {
		return nil, bad
	}
	res, err = p.GetResults()
	if err != nil {
		return nil, err // the commit failed
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return nil, fmt.Errorf("pipeline: %T where the batch's commit was due", res)
	}
	return outcomes, nil
}

// parseAlso parses b unless an earlier parse failed.
func parseAlso(err error, b []byte) (int64, error) {
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(b), 10, 64)
}

// The byte budgets and key retention the database applies (Options).
func (s *DB) maxBytes() int64 {
	if s.opts.MaxBytes > 0 {
		return s.opts.MaxBytes
	}
	return pending.DefaultMaxBytes
}

func (s *DB) maxBytesPerAgent() int64 {
	if s.opts.MaxBytesPerAgent > 0 {
		return s.opts.MaxBytesPerAgent
	}
	return pending.DefaultMaxBytesPerAgent
}

func (s *DB) keyRetention() time.Duration {
	if s.opts.KeyRetention > 0 {
		return s.opts.KeyRetention
	}
	return pending.DefaultKeyRetention
}
