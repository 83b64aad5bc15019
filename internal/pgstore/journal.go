package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/questiond/questiond/internal/pending"
)

// channel is the LISTEN/NOTIFY channel changes are announced on.
const channel = "questiond_changes"

// Journal is the pending.Journal on the questions table, shared by every
// replica. Unlike a file it can refuse a write because a rival replica's
// came first: a creation whose id or Idempotency-Key a live question holds
// (pending.ErrExists), an ending of a question already ended
// (pending.ErrNotFound). Every other failure wraps pending.ErrUnavailable
// and ErrUnavailable.
type Journal struct {
	s      *DB
	loaded atomic.Int64 // the change log's head as of the last Load

	// own maps a change this replica committed (ownKey) to the id of its
	// transaction until its tailer applies it, for the Mirror to wait for
	// (Follow turns it on); applied is the transaction id of the last
	// change the tailer applied (the tail applies transactions in id
	// order, every one below it first), so that a change it applied
	// before it was noted is not kept.
	own      sync.Map
	trackOwn atomic.Bool
	applied  atomic.Int64
}

// noteOwn notes this replica's change of q, made by transaction xid, until
// its tailer applies it. Noted first, checked second, against appliedOwn
// which does it the other way round: whichever comes last deletes it.
func (j *Journal) noteOwn(q *pending.Question, xid int64) {
	key := ownKey(q)
	j.own.Store(key, xid)
	if j.applied.Load() >= xid {
		j.own.Delete(key)
	}
}

// appliedOwn tells the journal that the tailer applied a change of kind
// (KindAsked, KindEnded) of question id made by transaction xid. By kind
// and id, not by record: a record deleted before the tail read its change
// must not leave the change noted for ever.
func (j *Journal) appliedOwn(kind, id string, xid int64) {
	j.applied.Store(xid)
	j.own.Delete(kind + " " + id)
}

// ownKey names a change of q: its creation or its ending.
func ownKey(q *pending.Question) string {
	if q.Ended == nil {
		return KindAsked + " " + q.ID
	}
	return KindEnded + " " + q.ID
}

// The one-change functions of the schema (migrations 2 and 5) serve the
// Puts of several records (restore, migrate), one statement each in one
// transaction; a Put of one record goes in a batch (questiond_apply, see
// batch.go). Each writes the question, updates the counters of the limits
// and appends the change with its transaction's id; the store announces it
// to the tailers after the commit (see the package doc).
const (
	// The statement's own transaction id comes back beside the change's
	// number: the function logs the change under that id, and the tail's
	// positions are transaction ids.
	askSQL = "SELECT questiond_ask($1, $2, $3, $4, $5, $6, $7), pg_current_xact_id()::text::bigint"
	endSQL = "SELECT questiond_end($1, $2, $3), pg_current_xact_id()::text::bigint"
)

var _ pending.Journal = (*Journal)(nil)

// Questions returns the journal of the questions.
func (s *DB) Questions() *Journal { return &Journal{s: s} }

// LoadedSeq is the log position (see Tailer.Last) of the last Load's
// snapshot: a tailer started from it misses nothing Load did not return
// (it may hand over again changes Load already saw).
//
// It is one past the last transaction that made a change the snapshot
// holds, not the snapshot's safe position, which may be an id no change
// was made by: after a crash of the server such an id can be handed out
// again, to a change a tailer started from it would then skip.
func (j *Journal) LoadedSeq() int64 { return j.loaded.Load() }

// loadedPositionSQL reads LoadedSeq: in the snapshot it is about, one past
// the last change of a transaction below the safe position, or the pruned
// mark if higher. No change lies between it and the safe position.
const loadedPositionSQL = `
SELECT greatest(coalesce((SELECT max(xid) + 1 FROM changes WHERE xid < s.safe), 0), (SELECT xid FROM log_pruned))
FROM (SELECT ` + safeSQL + ` AS safe) s`

// Load returns every question record, from one snapshot that also reads
// the change log's position (see LoadedSeq).
func (j *Journal) Load(ctx context.Context) ([]*pending.Question, error) {
	var qs []*pending.Question
	var head int64
	err := pgx.BeginTxFunc(ctx, j.s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, loadedPositionSQL).Scan(&head); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT id, record::text FROM questions")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, record string
			if err := rows.Scan(&id, &record); err != nil {
				return err
			}
			q, err := pending.DecodeRecord([]byte(record))
			if err != nil {
				return fmt.Errorf("record %q does not decode: %w", id, err)
			}
			qs = append(qs, q)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, questionsError("load questions", err)
	}
	j.loaded.Store(head)
	return qs, nil
}

// Put commits creations (records without Ended) and endings. One record
// is committed in a batch with the other journals' records that arrive
// meanwhile, each done or refused on its own; several are one
// transaction, all or nothing.
func (j *Journal) Put(ctx context.Context, qs ...*pending.Question) error {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	switch len(qs) {
	case 0:
		return nil
	case 1:
		return j.putBatched(ctx, qs[0])
	}
	defer j.s.announce()
	err := pgx.BeginFunc(ctx, j.s.pool, func(tx pgx.Tx) error {
		for _, q := range qs {
			if err := j.put(ctx, tx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, q := range qs {
			j.own.Delete(ownKey(q)) // rolled back
		}
		return questionsError("store questions", err)
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (j *Journal) put(ctx context.Context, db querier, q *pending.Question) error {
	record, err := pending.EncodeRecord(q)
	if err != nil {
		return fmt.Errorf("%w: %w", pending.ErrInvalid, err)
	}
	var seq, xid int64
	if q.Ended == nil {
		err = db.QueryRow(ctx, askSQL, q.ID, string(record), q.Owner, q.IdempotencyKey, q.CreatedAt,
			j.s.opts.MaxPending, j.s.opts.MaxPendingPerAgent).Scan(&seq, &xid)
	} else {
		err = db.QueryRow(ctx, endSQL, q.ID, string(record), q.Ended.At).Scan(&seq, &xid)
	}
	if err == nil && seq > 0 {
		// The one-change functions predate the byte counters: weigh the
		// record after them (counted, not checked: see migration 10).
		err = db.QueryRow(ctx, "SELECT 1 FROM questiond_weigh($1, $2)", q.ID, pending.Weigh(q)).Scan(new(int))
	}
	return j.changed(q, seq, xid, err)
}

// changed reads the outcome of a change of q: its number and transaction,
// or the error that refused it.
func (j *Journal) changed(q *pending.Question, seq, xid int64, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil && seq > 0:
		if j.trackOwn.Load() {
			j.noteOwn(q, xid)
		}
		return nil
	case err == nil && q.Ended == nil:
		return fmt.Errorf("create question %q: the id is taken: %w", q.ID, pending.ErrExists)
	case err == nil:
		return fmt.Errorf("end question %q: it has already ended, or is gone: %w", q.ID, pending.ErrNotFound)
	case errors.As(err, &pgErr) && pgErr.Code == "23505": // unique_violation: questions_live_key
		return fmt.Errorf("create question %q: idempotency key in use: %w", q.ID, pending.ErrExists)
	case errors.As(err, &pgErr) && (pgErr.Code == "QD001" || pgErr.Code == "QD002"):
		return fmt.Errorf("create question %q: %s: %w", q.ID, pgErr.Message, pending.ErrFull)
	}
	return questionsError("store question "+q.ID, err)
}

// Delete forgets the records with these ids and logs their forgetting (see
// forgetSQL). Their earlier changes stay in the log until pruned: a tailer
// that reads an ending whose record is gone ends the question where it is
// still pending (Follow).
func (j *Journal) Delete(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := writeContext(ctx)
	defer cancel()
	defer j.s.announce()
	if _, err := j.s.pool.Exec(ctx, forgetSQL, ids); err != nil {
		return questionsError("delete questions", err)
	}
	return nil
}

// WriteTimeout bounds one write to the questions, however long the caller
// would wait.
const WriteTimeout = 15 * time.Second

// writeContext detaches a write from its caller's cancellation: a write
// runs to its end (committed or failed) once begun, as the pending.Journal
// contract asks, so that a caller who leaves mid-commit (a closed
// connection) never leaves its outcome unknown. It is bounded by
// WriteTimeout instead.
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
}

// Close does nothing: the DB owns the pool, and is closed after the
// question store.
func (j *Journal) Close() error { return nil }

// questionsError wraps a failure of the questions' journal so it reads as
// pending.ErrUnavailable, unless it is a rival's win or a context error.
func questionsError(op string, err error) error {
	if errors.Is(err, pending.ErrExists) || errors.Is(err, pending.ErrNotFound) || errors.Is(err, pending.ErrInvalid) || errors.Is(err, pending.ErrFull) {
		return err
	}
	err = unavailable(op, err)
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: %w", pending.ErrUnavailable, err)
	}
	return err
}

// Ping asks the database for a round trip, for readiness probes: a replica
// that cannot reach PostgreSQL cannot acknowledge anything.
func (j *Journal) Ping(ctx context.Context) error {
	if err := j.s.pool.Ping(ctx); err != nil {
		return questionsError("ping", err)
	}
	return nil
}
