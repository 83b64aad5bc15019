package httpapi

import (
	"context"

	"github.com/questiond/questiond/internal/pending"
)

// Observed announces a change another replica made to the questions they
// share, as that replica announced it on its own streams: question.asked
// for a creation (Ended nil), question.replied or question.rejected for an
// ending. Watchers (webhooks) are not told: the replica that made the
// change tells them, so each is sent once. Pass it to the store as
// pending.MemoryOptions.OnObserve.
func (e *Events) Observed(q *pending.Question) {
	if q.Ended == nil {
		e.announceAsked(context.Background(), q)
		return
	}
	e.announceEnded(q)
}
