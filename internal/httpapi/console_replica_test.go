package httpapi_test

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
)

// What a PostgreSQL replica's change-log tail logs when it is held up.
var tailStalls = []string{
	"the change log's tail did not reach this replica's change in time",
	"a miss could not be checked against the change log",
}

// On a PostgreSQL replica the consoles' bookkeeping never makes the
// change log's tail wait on itself: a session whose first question has left
// retention gets its summary refreshed when its next question is asked,
// and that refresh must not read through the mirror, which would wait for
// the very change the tail is applying (issue 22, item 11). Counted by the
// tail's own warnings, not by the clock.
func TestConsoleOnAReplicaNeverStallsTheTail(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.WarnLevel)
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	tu := tuning{api: httpapi.Options{Auth: authBoth()}, store: pending.Options{MaxRetained: 1}, database: pgtest.Database(t)}
	c := &console{t: t, h: newHarnessWith(t, tu, log)}
	tui := c.consoleStream()

	first := c.ask(alphaToken, map[string]any{"sessionID": "ses_stall"})
	until(t, tui, "question.asked", first)
	c.reply(first, [][]string{{"SY215C"}, {}})
	until(t, tui, "question.replied", first)
	// Another ending takes the only retention place: first is forgotten.
	other := c.ask(alphaToken, map[string]any{"sessionID": "ses_other"})
	until(t, tui, "question.asked", other)
	c.reply(other, [][]string{{"SY215C"}, {}})
	until(t, tui, "question.replied", other)
	time.Sleep(1100 * time.Millisecond) // past summaryRefresh: the next event refreshes ses_stall's summary

	for range 3 {
		id := c.ask(alphaToken, map[string]any{"sessionID": "ses_stall"})
		until(t, tui, "question.asked", id)
		c.reply(id, [][]string{{"SY215C"}, {}})
		until(t, tui, "question.replied", id)
	}
	for _, msg := range tailStalls {
		if n := logs.FilterMessage(msg).Len(); n != 0 {
			t.Errorf("logged %d× %q: the tail waited on itself", n, msg)
		}
	}
}
