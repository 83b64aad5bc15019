package httpapi

import (
	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
)

// RepeatEnding publishes again how q ended, for a client that still shows
// it as pending (see ask.Service.RepeatEnding). The events are the ones
// Ended published: question.replied with the answers when the operator
// answered, question.rejected for every other ending.
//
// Only the TUI's streams get it: every other client hears of an ending once.
func (e *Events) RepeatEnding(q *pending.Question) {
	if c := e.console.Load(); c != nil && q.Ended != nil {
		c.RepeatEnding(q)
	}
}

var _ ask.EndingRepeater = (*Events)(nil)
