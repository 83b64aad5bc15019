package httpapi

import (
	"context"

	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// FromLog makes a change log that several replicas share the only source of
// what the event streams publish: from then on this replica's own creations
// and endings tell the other listeners (webhooks, sent once, by the
// replica that made the change) but not the streams, and Observed, called for every
// change of the log in its order, this replica's own included, publishes
// them. Every replica's streams then carry the same events in the same
// order. Call it before the server starts; without it (one machine) events
// are published as soon as each change is made, as before.
func (e *Events) FromLog() {
	e.fromLog = true
	e.logged = map[string]*pending.Question{}
}

// Observed announces a change to the questions the replicas share:
// question.asked for a creation (Ended nil), question.replied or
// question.rejected for an ending. The other listeners (webhooks) are not
// told: the replica that made the change tells them, so each is sent once.
//
// With FromLog it is called for every change, in the log's order, which
// already puts each question.asked before its ending. Without it, it is
// pending.Options.OnObserve: only other replicas' changes, each
// ending after its question.asked.
func (e *Events) Observed(q *pending.Question) {
	if e.fromLog {
		e.mu.Lock()
		if q.Ended == nil {
			e.logged[q.ID] = q
		} else {
			delete(e.logged, q.ID)
		}
		e.mu.Unlock()
	}
	if e.fromLog {
		e.announceLogged(q)
		return
	}
	if q.Ended == nil {
		e.announceAsked(context.Background(), q)
		return
	}
	e.publishEnded(q)
}

// announceLogged is Observed with FromLog, on the change log's tail's
// goroutine: the standard streams are told at once (a replica's own
// creation returns once its question.asked is out there), and the
// consoles' share, which reads the store, goes to the console's queue in
// the log's order. A read on the tail's goroutine that waits for the tail
// (a miss on the mirror catches up with the log) would stall it.
func (e *Events) announceLogged(q *pending.Question) {
	c := e.console.Load()
	switch {
	case c == nil && q.Ended == nil:
		e.publishAskedToAll(context.Background(), q)
	case c == nil:
		e.publishEnding(q, sse.Everyone)
	case q.Ended == nil:
		e.publishBody(context.Background(), q.Directory, sse.Standard, wire.EventAsked, listItem(q))
		c.Logged(q)
	default:
		e.publishEnding(q, sse.Standard)
		c.Logged(q)
	}
}

// asLogged turns qs, questions the store lists (pending and ended), into
// what the streams have been told, with FromLog: a question whose
// question.asked is out but not its ending is pending, one whose
// question.asked is not out yet is left out, and other ended ones stay
// ended. Without FromLog it returns qs. Questions that only f's Ended
// lets in are dropped unless f.Ended.
func (e *Events) asLogged(qs []*pending.Question, f pending.Filter) []*pending.Question {
	if !e.fromLog {
		return qs
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := qs[:0:0]
	for _, q := range qs {
		if logged, ok := e.logged[q.ID]; ok {
			out = append(out, logged)
		} else if q.Ended != nil && f.Ended {
			out = append(out, q)
		}
	}
	return out
}

// listFilter is the filter to list the store with for what f asks of the
// streams' view (asLogged): with FromLog, a question the store has ended
// may still be pending on the streams.
func (e *Events) listFilter(f pending.Filter) pending.Filter {
	if e.fromLog {
		f.Ended = true
	}
	return f
}
