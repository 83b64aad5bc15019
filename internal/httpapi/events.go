package httpapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi/console"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// Bus is the event transport: the in-process sse.Broker today, a bus shared
// by several replicas later. Publish must not wait for slow subscribers.
type Bus interface {
	Publish(ctx context.Context, m sse.Message) error
	// Watching reports whether a stream of audience's kind is connected.
	Watching(audience sse.Audience) bool
	// ServeEvent and ServeGlobal stream events to r, or write nothing and
	// return why they refuse it (sse.ErrClosed, sse.ErrTooManyScopes, ...).
	ServeEvent(w http.ResponseWriter, r *http.Request, directory string, audience sse.Audience, initial func() []sse.Message) error
	ServeGlobal(w http.ResponseWriter, r *http.Request, audience sse.Audience, initial func() []sse.Message) error
	// ServeEventMerged and ServeGlobalMerged do the same with another
	// server's frames (feed) between the bus's: in front of an OpenCode
	// server (see sse.Feed).
	ServeEventMerged(w http.ResponseWriter, r *http.Request, directory string, audience sse.Audience, initial func() []sse.Message, feed sse.Feed) error
	ServeGlobalMerged(w http.ResponseWriter, r *http.Request, audience sse.Audience, initial func() []sse.Message, feed sse.Feed) error
	Close(ctx context.Context) error
}

// Events is the OpenCode encoding of questions asked and ended, published
// on the bus: an ask.Listener, told by ask.Announcements, which puts a
// question's question.asked before its question.replied or
// question.rejected.
type Events struct {
	bus Bus
	log *zap.Logger

	mu sync.Mutex // guards logged

	// console shows the OpenCode TUI its own view of the questions; set by
	// New. Until then (a store restoring its questions) every stream gets
	// every event.
	console atomic.Pointer[console.Console]

	// overlay: questiond stands in front of an OpenCode server, and the
	// TUI's streams hear of the questions it cannot show (those not filed
	// in the server's sessions) in a toast. Set by New.
	overlay atomic.Bool
	// shown remembers, with overlay, where the TUI may show questiond's
	// questions, for RepeatForgotten.
	shown shownInSessions

	// fromLog: streams hear of changes only through Observed, in the
	// order of the change log several replicas share (see FromLog).
	fromLog bool
	// logged holds, with fromLog, the questions whose question.asked the
	// log has published and whose ending it has not (guarded by mu): what a
	// new stream's first frames show, rather than the store, which runs
	// ahead of the log with this replica's own changes.
	logged map[string]*pending.Question
}

// NewEvents returns the encoder for bus. Tell it of questions through
// ask.Announcements (ask.NewAnnouncements(log, events, watchers…)).
func NewEvents(bus Bus, log *zap.Logger) *Events {
	if log == nil {
		log = zap.NewNop()
	}
	return &Events{bus: bus, log: log.Named("events")}
}

// Asked publishes question.asked for q: at once on every stream but the
// consoles', which show it when its session's turn comes. With FromLog the
// change log publishes it instead (see Observed).
func (e *Events) Asked(q *pending.Question) {
	if !e.fromLog {
		e.announceAsked(context.Background(), q)
	}
}

// announceAsked publishes question.asked for q.
func (e *Events) announceAsked(ctx context.Context, q *pending.Question) {
	if c := e.console.Load(); c == nil {
		e.publishAskedToAll(ctx, q)
	} else {
		e.publishNoted(ctx, q.Directory, sse.Standard, wire.EventAsked, listItem(q), gateNote(q))
		c.Asked(q)
	}
}

// publishAskedToAll publishes question.asked for q to every stream, where
// no console shows the TUI its own view: without a console at all (before
// New), or in front of an OpenCode server, where the TUI's streams also
// hear of a question it cannot show in a toast.
func (e *Events) publishAskedToAll(ctx context.Context, q *pending.Question) {
	e.publishNoted(ctx, q.Directory, sse.Everyone, wire.EventAsked, listItem(q), gateNote(q))
	switch {
	case !e.overlay.Load():
	case q.Hosted:
		e.shown.remember(q)
	default:
		e.publish(ctx, q.Directory, sse.Console, eventToastShow, unshownToast(q))
	}
}

// Ended publishes how q ended: question.replied for an operator's answer,
// question.rejected for every other ending, so no client keeps showing a
// question nobody waits for any more. With FromLog the change log
// publishes it instead.
func (e *Events) Ended(q *pending.Question) {
	if !e.fromLog {
		e.publishEnded(q)
	}
}

var _ ask.Listener = (*Events)(nil)

// publishEnded publishes q's ending to the streams and the consoles.
func (e *Events) publishEnded(q *pending.Question) {
	if c := e.console.Load(); c != nil {
		c.Ended(q)
	} else {
		e.publishEnding(q, sse.Everyone)
	}
}

// publishEnding publishes question.replied or question.rejected for q to
// audience.
func (e *Events) publishEnding(q *pending.Question, audience sse.Audience) {
	typ, properties := wire.EndingEvent(q)
	e.publish(context.Background(), q.Directory, audience, typ, properties)
}

func (e *Events) publish(ctx context.Context, directory string, audience sse.Audience, typ string, properties any) {
	body, err := wire.MarshalJSON(properties)
	if err != nil {
		e.log.Warn("could not publish event", zap.String("type", typ), zap.Error(err))
		return
	}
	e.publishBody(ctx, directory, audience, typ, body)
}

// publishBody publishes an event whose properties are already encoded; nil
// (a question listItem could not encode) publishes nothing.
func (e *Events) publishBody(ctx context.Context, directory string, audience sse.Audience, typ string, body []byte) {
	e.publishNoted(ctx, directory, audience, typ, body, "")
}

// publishNoted is publishBody with a note for the streams' filters
// (sse.Message.Note).
func (e *Events) publishNoted(ctx context.Context, directory string, audience sse.Audience, typ string, body []byte, note string) {
	if body == nil {
		e.log.Warn("could not publish event", zap.String("type", typ), zap.Error(errUnencodable))
		return
	}
	if err := e.bus.Publish(ctx, sse.Message{Directory: directory, Audience: audience, Event: sse.Event{Type: typ, Properties: body}, Note: note}); err != nil {
		e.log.Warn("could not publish event", zap.String("type", typ), zap.Error(err))
	}
}

// askedMessages turns pending questions into question.asked messages, for the
// first frames of a new event stream. Their properties are the questions'
// memoized list items: a stream that opens costs no encoding.
func askedMessages(questions []*pending.Question) []sse.Message {
	out := make([]sse.Message, 0, len(questions))
	for _, q := range questions {
		body := listItem(q)
		if body == nil {
			continue
		}
		out = append(out, sse.Message{Directory: q.Directory, Event: sse.Event{Type: wire.EventAsked, Properties: body}, Note: gateNote(q)})
	}
	return out
}

// consoleStreams is what the console publishes on and lists through (see
// console.Streams): e's bus, and e's view of the store. The console calls
// it holding its own lock; e's mutex, taken for asLogged, is held for a map
// lookup only and never while calling out (see package console).
type consoleStreams struct{ e *Events }

func (cs consoleStreams) Watching(audience sse.Audience) bool { return cs.e.bus.Watching(audience) }

func (cs consoleStreams) Publish(ctx context.Context, directory string, audience sse.Audience, typ string, properties any) {
	cs.e.publish(ctx, directory, audience, typ, properties)
}

func (cs consoleStreams) PublishEnding(q *pending.Question, audience sse.Audience) {
	cs.e.publishEnding(q, audience)
}

func (cs consoleStreams) ListFilter(f pending.Filter) pending.Filter { return cs.e.listFilter(f) }

func (cs consoleStreams) AsLogged(questions []*pending.Question, f pending.Filter) []*pending.Question {
	return cs.e.asLogged(questions, f)
}
