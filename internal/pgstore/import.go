package pgstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// Imported counts what Import copied and what it left because the
// database already held it.
type Imported struct {
	Questions, QuestionsSkipped int
	Sessions, SessionsSkipped   int
}

// Import copies questions (pending and ended) and session records (raw
// JSON by session id, as session journals keep them) into the database, in
// one transaction: all or nothing. A question whose id, or whose live
// Idempotency-Key, the database already holds is skipped, and so is a
// session record it already has, so running it again copies nothing twice.
// Each imported pending question is logged as asked, so that running
// replicas announce it; ended ones are read by replicas when they start.
func (s *DB) Import(ctx context.Context, questions []*pending.Question, sessions map[string][]byte) (Imported, error) {
	var n Imported
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		n = Imported{}
		var asked []string
		for _, q := range questions {
			record, err := pending.EncodeRecord(q)
			if err != nil {
				return err
			}
			var endedAt any
			if q.Ended != nil {
				endedAt = q.Ended.At
			}
			tag, err := tx.Exec(ctx, `
INSERT INTO questions (id, record, owner, request_key, ended, created_at, ended_at, weight)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
				q.ID, string(record), q.Owner, q.IdempotencyKey, q.Ended != nil, q.CreatedAt, endedAt, pending.Weigh(q))
			if err != nil {
				return fmt.Errorf("question %q: %w", q.ID, err)
			}
			if tag.RowsAffected() == 0 {
				n.QuestionsSkipped++
				continue
			}
			n.Questions++
			if q.Ended == nil {
				asked = append(asked, q.ID)
			}
		}
		// The counters of the limits follow what is now pending, spread
		// over the stripes round-robin as migration 5 spreads them.
		if _, err := tx.Exec(ctx, `
UPDATE questions q SET stripe = r.i % 32
FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) - 1 AS i FROM questions WHERE NOT ended) r
WHERE q.id = r.id`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE pending_stripes p SET n = (SELECT count(*) FROM questions WHERE NOT ended AND stripe = p.stripe)"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO pending_owners (owner, n) SELECT owner, count(*) FROM questions WHERE NOT ended AND owner <> '' GROUP BY owner
ON CONFLICT (owner) DO UPDATE SET n = EXCLUDED.n`); err != nil {
			return err
		}
		// So do the byte counters (migration 10), pending and ended alike;
		// nothing is checked: the budgets bound what agents create.
		if _, err := tx.Exec(ctx, `
INSERT INTO pending_owners (owner, n) SELECT DISTINCT owner, 0 FROM questions WHERE owner <> '' ON CONFLICT DO NOTHING;
UPDATE pending_owners o SET bytes = coalesce((SELECT sum(weight) FROM questions q WHERE q.owner = o.owner), 0);
UPDATE held_bytes SET n = (SELECT coalesce(sum(weight), 0) FROM questions)`); err != nil {
			return err
		}
		if len(asked) > 0 {
			if _, err := tx.Exec(ctx, `
INSERT INTO changes (seq, question_id, kind, xid)
SELECT nextval('changes_seq'), id, 'asked', pg_current_xact_id()::text::bigint FROM unnest($1::text[]) WITH ORDINALITY AS a(id, i) ORDER BY i`, asked); err != nil {
				return err
			}
		}
		for id, raw := range sessions {
			var rec session.Session
			if err := json.Unmarshal(raw, &rec); err != nil || rec.ID != id {
				return fmt.Errorf("%w: %q does not decode to its own record (%v)", session.ErrCorrupt, id, err)
			}
			tag, err := tx.Exec(ctx, "INSERT INTO sessions (id, record) VALUES ($1, $2) ON CONFLICT DO NOTHING", id, string(raw))
			if err != nil {
				return fmt.Errorf("session %q: %w", id, err)
			}
			if tag.RowsAffected() == 0 {
				n.SessionsSkipped++
			} else {
				n.Sessions++
			}
		}
		return nil
	})
	if err != nil {
		return Imported{}, unavailable("import", err)
	}
	return n, nil
}
