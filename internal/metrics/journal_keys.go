package metrics

import (
	"context"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// The timed journal passes the remembered keys of forgotten questions
// through (pending.KeyJournal), so that they outlive a restart behind it
// too; a journal that keeps none gets plain deletes.
var _ pending.KeyJournal = (*timedJournal)(nil)

// Forget is timed as a delete.
func (t *timedJournal) Forget(ctx context.Context, ids []string, keep, drop []pending.GoneKey) error {
	kj, ok := t.Journal.(pending.KeyJournal)
	if !ok {
		if len(ids) == 0 {
			return nil
		}
		return t.Delete(ctx, ids...)
	}
	start := time.Now()
	err := kj.Forget(ctx, ids, keep, drop)
	t.del.Observe(time.Since(start).Seconds())
	return err
}

// LoadGone returns what the journal keeps, or nothing.
func (t *timedJournal) LoadGone(ctx context.Context) ([]pending.GoneKey, error) {
	if kj, ok := t.Journal.(pending.KeyJournal); ok {
		return kj.LoadGone(ctx)
	}
	return nil, nil
}
