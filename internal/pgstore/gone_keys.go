package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/pending"
)

// The Journal remembers the Idempotency-Keys of the questions it forgets
// (pending.KeyJournal) in the gone_keys table, so that a retry on any
// replica, or after a restart, learns that its result is gone. Every
// replica's store forgets the same questions and writes the same keys; the
// last write of a key wins, and a key past its time is deleted by whoever
// forgets next.
var _ pending.KeyJournal = (*Journal)(nil)

// forgetSQL deletes the records with ids ($1) and logs a forgetting
// (KindForgot) of each one it deleted, in its transaction: every replica's
// tail then forgets the result too (Follow). A record another replica
// deleted first is logged once, by that replica. It subtracts their
// weights from the byte counters (migration 10).
const forgetSQL = "SELECT questiond_forget($1)"

// Forget deletes the records with ids, logging their forgetting, stores
// keep and deletes drop and every key past its time, in one transaction.
// The questions' earlier changes stay in the log, as for Delete.
func (j *Journal) Forget(ctx context.Context, ids []string, keep, drop []pending.GoneKey) error {
	if len(ids) == 0 && len(keep) == 0 && len(drop) == 0 {
		return nil
	}
	ctx, cancel := writeContext(ctx)
	defer cancel()
	if len(ids) > 0 {
		defer j.s.announce()
	}
	err := pgx.BeginFunc(ctx, j.s.pool, func(tx pgx.Tx) error {
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, forgetSQL, ids); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, "DELETE FROM gone_keys WHERE until <= now()"); err != nil {
			return err
		}
		for _, g := range drop {
			if _, err := tx.Exec(ctx, "DELETE FROM gone_keys WHERE owner = $1 AND request_key = $2 AND until <= $3",
				g.Owner, g.Key, g.Until); err != nil {
				return err
			}
		}
		if len(keep) == 0 {
			return nil
		}
		owners, keys, qids, hashes, until := make([]string, len(keep)), make([]string, len(keep)), make([]string, len(keep)), make([]string, len(keep)), make([]time.Time, len(keep))
		for i, g := range keep {
			owners[i], keys[i], qids[i], hashes[i], until[i] = g.Owner, g.Key, g.ID, g.RequestHash, g.Until
		}
		_, err := tx.Exec(ctx, `
INSERT INTO gone_keys AS g (owner, request_key, question_id, request_hash, until)
SELECT DISTINCT ON (o, k) o, k, q, h, u FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS t(o, k, q, h, u)
ORDER BY o, k, u DESC
ON CONFLICT (owner, request_key) DO UPDATE SET question_id = EXCLUDED.question_id, request_hash = EXCLUDED.request_hash, until = EXCLUDED.until
WHERE g.until < EXCLUDED.until`, owners, keys, qids, hashes, until)
		return err
	})
	if err != nil {
		return questionsError("forget questions", err)
	}
	return nil
}

// LoadGone returns every remembered key still in its time.
func (j *Journal) LoadGone(ctx context.Context) ([]pending.GoneKey, error) {
	rows, err := j.s.pool.Query(ctx, "SELECT owner, request_key, question_id, request_hash, until FROM gone_keys WHERE until > now()")
	if err != nil {
		return nil, questionsError("load forgotten keys", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pending.GoneKey, error) {
		var g pending.GoneKey
		err := row.Scan(&g.Owner, &g.Key, &g.ID, &g.RequestHash, &g.Until)
		return g, err
	})
	if err != nil {
		return nil, questionsError("load forgotten keys", err)
	}
	return keys, nil
}
