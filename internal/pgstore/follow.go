package pgstore

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
)

// Follow keeps m, a store that pending.Open restored from j, in step with
// the other replicas: it tails the change log from what j's Load saw and
// hands each change to m.Observe, which ignores this replica's own. Stop
// the tailer before closing m.
func (s *Store) Follow(m *pending.Memory, j *Journal, opts TailOptions) *Tailer {
	return s.Tail(j.LoadedSeq(), func(c Change) {
		if c.Question == nil {
			return // forgotten (retention) since
		}
		if _, err := m.Observe(context.Background(), c.Question); err != nil && !errors.Is(err, pending.ErrClosed) {
			s.log.Warn("change not applied", zap.Int64("seq", c.Seq), zap.String("id", c.Question.ID), zap.Error(err))
		}
	}, opts)
}
