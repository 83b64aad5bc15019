package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
)

// notifySQL announces the change log's new changes, in a transaction that
// does not wait for the disk (see the package doc).
const notifySQL = "SELECT set_config('synchronous_commit', 'off', true), pg_notify('" + channel + "', '')"

// putNotifying commits one change as put does and, in the same write to
// the server, a notification in a transaction of its own that the server
// runs as soon as the change has committed. The other replicas hear of the
// change without waiting for a round trip of this one's notifier; with
// several replicas every change crosses to another one, and the
// notifier's round trip was a third of a crossing. When every request
// connection is taken, it leaves the notification to the notifier.
func (j *Journal) putNotifying(ctx context.Context, q *pending.Question) error {
	conn, err := j.s.pool.Acquire(ctx)
	if err != nil {
		j.s.announce()
		return j.changed(q, 0, 0, err)
	}
	defer conn.Release()
	if st := j.s.pool.Stat(); st.AcquiredConns() >= st.MaxConns() {
		// Other changes may be queueing for a connection: holding this
		// one for a second transaction would slow every one of them, and
		// the notifier sends one notification for many changes.
		defer j.s.announce()
		return j.put(ctx, conn, q)
	}
	record, err := pending.EncodeRecord(q)
	if err != nil {
		return fmt.Errorf("%w: %w", pending.ErrInvalid, err)
	}
	name, sql := "questiond_ask", askSQL
	params := [][]byte{[]byte(q.ID), record}
	if q.Ended == nil {
		params = append(params, []byte(q.Owner), []byte(q.IdempotencyKey), timestamptz(q.CreatedAt),
			strconv.AppendInt(nil, int64(j.s.opts.MaxPending), 10), strconv.AppendInt(nil, int64(j.s.opts.MaxPendingPerAgent), 10))
	} else {
		name, sql = "questiond_end", endSQL
		params = append(params, timestamptz(q.Ended.At))
	}
	statement, err := conn.Conn().Prepare(ctx, name, sql)
	if err != nil {
		return j.changed(q, 0, 0, err)
	}
	p := conn.Conn().PgConn().StartPipeline(ctx)
	p.SendQueryStatement(statement, params, nil, nil)
	p.SendPipelineSync() // the change's transaction commits here
	p.SendQueryParams(notifySQL, nil, nil, nil, nil)
	p.SendPipelineSync()
	if err := p.Flush(); err != nil {
		j.s.announce() // the change's outcome is unknown to the tailers too
		return j.changed(q, 0, 0, err)
	}
	seq, xid, err := committed(p)
	if cerr := p.Close(); cerr != nil {
		// The notification (or, with err, the change too) failed: the
		// notifier sends one more, for the change or for the tailers its
		// transaction held back.
		j.s.announce()
		j.s.log.Debug("change log notification not sent with the change", zap.Error(redact(cerr)))
	}
	return j.changed(q, seq, xid, err)
}

// committed reads a change's row and then its transaction's end: the
// change is committed only once the server is past the first Sync.
func committed(p *pgconn.Pipeline) (seq, xid int64, err error) {
	res, err := p.GetResults()
	if err != nil {
		return 0, 0, err
	}
	rows, ok := res.(*pgconn.ResultReader)
	if !ok {
		return 0, 0, fmt.Errorf("pipeline: %T where the change's result was due", res)
	}
	var values [][]byte
	if rows.NextRow() {
		values = rows.Values()
		if len(values) == 2 {
			seq, err = strconv.ParseInt(string(values[0]), 10, 64)
			if err == nil {
				xid, err = strconv.ParseInt(string(values[1]), 10, 64)
			}
		}
	}
	if _, cerr := rows.Close(); cerr != nil {
		return 0, 0, cerr
	}
	if err != nil || len(values) != 2 {
		return 0, 0, fmt.Errorf("the change's row does not read as two numbers: %q (%v)", values, err)
	}
	res, err = p.GetResults()
	if err != nil {
		return 0, 0, err // the commit failed
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return 0, 0, fmt.Errorf("pipeline: %T where the change's commit was due", res)
	}
	return seq, xid, nil
}

// timestamptz is t as PostgreSQL reads a timestamptz in text, cut to the
// microsecond as pgx's binary encoding does.
func timestamptz(t time.Time) []byte {
	return t.Truncate(time.Microsecond).AppendFormat(nil, "2006-01-02 15:04:05.999999Z07:00")
}
