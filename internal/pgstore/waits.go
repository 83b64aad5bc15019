package pgstore

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// waitsTimeout bounds the bookkeeping of keyed waits; it is best effort.
const waitsTimeout = 2 * time.Second

// Attached records that a keyed caller (a POST /elicit with an
// Idempotency-Key) now waits on question id through this replica. Best
// effort: a failure is logged and leaves the single-replica behaviour.
func (m *Mirror) Attached(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitsTimeout)
	defer cancel()
	if _, err := m.db.pool.Exec(ctx, "UPDATE questions SET attached_at = now() WHERE id = $1 AND NOT ended", id); err != nil {
		m.db.log.Debug("could not record a keyed wait", zap.String("id", id), zap.Error(redact(err)))
	}
}

// AttachedWithin reports whether a keyed caller attached to question id's
// wait, on any replica, within the last d: the replica whose own caller
// left then keeps the question rather than withdraw it after its grace.
func (m *Mirror) AttachedWithin(ctx context.Context, id string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), waitsTimeout)
	defer cancel()
	var recent bool
	err := m.db.pool.QueryRow(ctx, "SELECT coalesce(attached_at > now() - make_interval(secs => $2), false) FROM questions WHERE id = $1",
		id, d.Seconds()).Scan(&recent)
	if err != nil {
		m.db.log.Debug("could not read a keyed wait", zap.String("id", id), zap.Error(redact(err)))
		return false
	}
	return recent
}
