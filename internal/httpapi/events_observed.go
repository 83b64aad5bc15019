package httpapi

import (
	"context"

	"github.com/questiond/questiond/internal/pending"
)

// FromLog makes a change log that several replicas share the only source of
// what the event streams publish: from then on this replica's own creations
// and endings tell the watchers (webhooks, sent once, by the replica that
// made the change) but not the streams, and Observed, called for every
// change of the log in its order, this replica's own included, publishes
// them. Every replica's streams then carry the same events in the same
// order. Call it before the server starts; without it (one machine) events
// are published as soon as each change is made, as before.
func (e *Events) FromLog() { e.fromLog = true }

// Observed announces a change to the questions the replicas share:
// question.asked for a creation (Ended nil), question.replied or
// question.rejected for an ending. Watchers (webhooks) are not told: the
// replica that made the change tells them, so each is sent once.
//
// With FromLog it is called for every change, in the log's order, which
// already puts each question.asked before its ending. Without it, it is
// pending.MemoryOptions.OnObserve: only other replicas' changes, each
// ending after its question.asked.
func (e *Events) Observed(q *pending.Question) {
	if q.Ended == nil {
		e.announceAsked(context.Background(), q)
		return
	}
	if e.fromLog {
		e.publishEnded(q)
		return
	}
	e.announceEnded(q)
}
