package console

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// What the OpenCode TUI's event streams (the consoles) see of the questions.
//
// OpenCode itself never has two questions pending in one session, and the TUI
// renders a second one broken. So a console is shown one question per
// session, the oldest first, and the next one when that one has ended; every
// other client keeps getting every question at once. Consoles also get the
// events OpenCode sends around its own question tool, so the TUI looks alive:
// the session's title and busy status, the history message with the tool
// call, and a toast naming a new question wherever the operator is looking.

// consoleUserAgent starts the User-Agent the OpenCode TUI sends
// ("opencode/1.18.33").
const consoleUserAgent = "opencode/"

// consoleNextDelay separates the end of a session's question from the
// announcement of its next one: the TUI applies the events of one 16 ms batch
// together, and a new question in the same batch as the end of the previous
// one inherits its stale panel state.
const consoleNextDelay = 250 * time.Millisecond

// Events only consoles get.
const (
	eventSessionUpdated = "session.updated"
	eventSessionStatus  = "session.status"
	eventSessionIdle    = "session.idle"
	eventMessageUpdated = "message.updated"
	eventPartUpdated    = "message.part.updated"
	eventToastShow      = "tui.toast.show"
	eventSessionSelect  = "tui.session.select"
)

// A new console stream is told how the last consoleEndingsReplayed
// questions that ended within consoleEndingsWithin ended.
const (
	consoleEndingsReplayed = 256
	consoleEndingsWithin   = 15 * time.Minute
)

// maxSummaries bounds the session summaries kept while consoles watch.
const maxSummaries = 4096

// summaryRefresh is how often at most a session's summary is read from the
// store again once its first question has left retention: a session that
// asks all the time (an agent's inbox at --max-retained) loses its first
// question with nearly every answer, and each read costs all it retains.
const summaryRefresh = time.Second

// toastDuration is how long the TUI shows a new question's toast, in ms.
const toastDuration = 8000

type sessionUpdatedEvent struct {
	SessionID string      `json:"sessionID"`
	Info      sessionInfo `json:"info"`
}

type sessionStatusEvent struct {
	SessionID string        `json:"sessionID"`
	Status    sessionStatus `json:"status"`
}

type sessionIDEvent struct {
	SessionID string `json:"sessionID"`
}

type messageUpdatedEvent struct {
	SessionID string           `json:"sessionID"`
	Info      assistantMessage `json:"info"`
}

type partUpdatedEvent struct {
	SessionID string `json:"sessionID"`
	Part      any    `json:"part"`
	Time      int64  `json:"time"`
}

type toastEvent struct {
	Title    string `json:"title,omitempty"`
	Message  string `json:"message"`
	Variant  string `json:"variant"`
	Duration int    `json:"duration,omitempty"`
}

// IsConsole reports whether r comes from the OpenCode TUI, whose streams
// get the console's view (Replay and the Console audience).
func IsConsole(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("User-Agent"), consoleUserAgent)
}

// Console decides what consoles are shown and when. Its lock orders
// everything it publishes: an ending always goes out before the next
// question of its session, and a question is never announced to consoles
// after its ending. While no console is connected it does no work beyond
// publishing endings: a console that connects is shown the state of the
// store then (replay), and the bus counts it before its replay is made.
// httpapi's event encoder tells it of questions (Asked, Ended, Logged,
// RepeatEnding); it also serves the console's routes (sessions.go). Its
// lock's place among the others is in the package comment.
type Console struct {
	questions *ask.Service
	store     ask.QuestionStore // the service's, for reads
	streams   Streams
	version   string      // in every session's info
	httpLog   *zap.Logger // the routes' errors
	log       *zap.Logger
	follow    bool // after an answer, move every console to the next waiting session

	// queue runs, in order, what a replica's change log tail hands over
	// (Events.FromLog), off the tail's goroutine.
	queue orderedWork

	mu        sync.Mutex
	shown     map[string]string          // session → the question consoles are shown; "" while its next waits out consoleNextDelay
	summaries map[string]*sessionSummary // sessions seen while consoles watch, at most maxSummaries
	timers    map[*time.Timer]struct{}
	closed    bool
}

// Options configure a Console.
type Options struct {
	Questions *ask.Service
	Streams   Streams
	Version   string
	// Follow moves every attached TUI to the next session with a pending
	// question after the operator answers the last one of a session.
	Follow bool
	// Logger is the HTTP routes' logger: the console logs to it as
	// "console".
	Logger *zap.Logger
}

// New returns the console of questions, publishing on streams.
func New(opts Options) *Console {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Console{
		questions: opts.Questions, store: opts.Questions.Store(), streams: opts.Streams, version: opts.Version,
		httpLog: log, log: log.Named("console"), follow: opts.Follow,
		shown: map[string]string{}, summaries: map[string]*sessionSummary{}, timers: map[*time.Timer]struct{}{},
	}
}

// Streams is what a Console publishes on and lists through: the OpenCode
// event encoder's bus, and its view of the store (with a change log shared
// by replicas, the streams run behind the store; see httpapi.Events.FromLog).
type Streams interface {
	// Watching reports whether a stream of audience's kind is connected.
	Watching(audience sse.Audience) bool
	// Publish publishes an event of type typ with properties.
	Publish(ctx context.Context, directory string, audience sse.Audience, typ string, properties any)
	// PublishEnding publishes q's question.replied or question.rejected.
	PublishEnding(q *pending.Question, audience sse.Audience)
	// ListFilter is the filter to list the store with for what f asks of
	// the streams' view; AsLogged turns what it listed into that view.
	ListFilter(f pending.Filter) pending.Filter
	AsLogged(questions []*pending.Question, f pending.Filter) []*pending.Question
}

func (c *Console) writeError(w http.ResponseWriter, r *http.Request, err error) {
	wire.WriteError(c.httpLog, w, r, err)
}

// Asked tells consoles about a new question: its session's turn, history and
// status, and a toast.
func (c *Console) Asked(q *pending.Question) {
	if !c.streams.Watching(sse.Console) {
		c.unwatched(q)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, busy := c.shown[q.SessionID]; !busy {
		c.shown[q.SessionID] = q.ID
		c.publish(q.Directory, wire.EventAsked, wire.ToQuestionRequest(q))
	}
	c.publishMessage(q)
	c.publishSession(q, true)
	c.publish(q.Directory, eventToastShow, toastEvent{
		Title: "Question from " + askerName(q), Message: consoleTitle(q) + " (ctrl+x l lists sessions)",
		Variant: "info", Duration: toastDuration,
	})
}

// Ended publishes q's ending to every stream, updates the consoles' view of
// its session, and gives the session's next question its turn.
func (c *Console) Ended(q *pending.Question) { c.endedFor(q, sse.Everyone) }

// Logged takes the consoles' share of a change a replica's change log
// hands over (httpapi.Events.FromLog): q's announcement, or its ending, to
// the consoles only (the standard streams have been told). It reads the
// store, so it runs off the tail's goroutine, whose reads would wait for the
// tail itself, in the log's order.
func (c *Console) Logged(q *pending.Question) {
	if q.Ended == nil {
		c.queue.do(func() { c.Asked(q) })
		return
	}
	c.queue.do(func() { c.endedFor(q, sse.Console) })
}

// listTimeout bounds a listing of the store for the consoles.
const listTimeout = 5 * time.Second

// endedFor is Ended publishing q's ending to audience only (Console: the
// standard streams have been told already).
func (c *Console) endedFor(q *pending.Question, audience sse.Audience) {
	if !c.streams.Watching(sse.Console) {
		// Nothing to order against: a console that connects from here on
		// reads the store, where q has already ended.
		c.streams.PublishEnding(q, audience)
		c.unwatched(q)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streams.PublishEnding(q, audience)
	c.publishMessage(q)
	waiting := c.publishSession(q, false)
	if c.shown[q.SessionID] == q.ID {
		delete(c.shown, q.SessionID)
		if waiting && !c.closed {
			// The session stays taken until showNext: a question asked
			// meanwhile must neither share the ending's render batch nor go
			// ahead of an older one waiting.
			c.shown[q.SessionID] = ""
			c.after(func() { c.showNext(q.SessionID) })
		}
	}
	if !waiting && c.follow && q.Ended != nil && (q.Ended.Ending == pending.EndReplied || q.Ended.Ending == pending.EndRejected) {
		c.after(c.selectNext)
	}
}

// unwatched forgets what q changes while no console watches: the
// summaries would miss it, and a console that connects later is shown its
// replay. It keeps the reply path off the console's lock but for this.
func (c *Console) unwatched(q *pending.Question) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q.Ended != nil && c.shown[q.SessionID] == q.ID {
		delete(c.shown, q.SessionID)
	}
	clear(c.summaries)
}

// RepeatEnding tells consoles again how q ended: a TUI that showed q before a
// restart still has its panel open, and only the ending closes it.
func (c *Console) RepeatEnding(q *pending.Question) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streams.PublishEnding(q, sse.Console)
}

// showNext announces the oldest pending question of sessionID to consoles,
// unless one is shown already.
func (c *Console) showNext(sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, busy := c.shown[sessionID]; (busy && id != "") || c.closed {
		return
	}
	questions, err := c.list(pending.Filter{SessionID: sessionID})
	if err != nil || len(questions) == 0 {
		delete(c.shown, sessionID) // free again: the next question asked is shown at once
		return
	}
	next := oldest(questions)
	c.shown[sessionID] = next.ID
	c.publish(next.Directory, wire.EventAsked, wire.ToQuestionRequest(next))
}

// selectNext moves consoles to the session of the oldest pending question.
func (c *Console) selectNext() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	questions, err := c.list(pending.Filter{})
	if err != nil || len(questions) == 0 {
		return
	}
	next := oldest(questions)
	c.publish(next.Directory, eventSessionSelect, sessionIDEvent{SessionID: next.SessionID})
}

// Replay is the first frames of a new console stream: the endings of
// questions that ended lately (a TUI that reconnects after a restart or a
// dropped connection still shows their panels, and only an ending closes
// one), then, for each session with a pending question, the question it is
// shown.
func (c *Console) Replay() []sse.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	all, err := c.list(pending.Filter{Ended: true})
	if err != nil {
		return nil
	}
	var questions, ended []*pending.Question
	since := time.Now().Add(-consoleEndingsWithin)
	for _, q := range all {
		switch {
		case q.Ended == nil:
			questions = append(questions, q)
		case q.Ended.At.After(since):
			ended = append(ended, q) // in the order they ended
		}
	}
	ended = ended[max(0, len(ended)-consoleEndingsReplayed):]
	out := make([]sse.Message, 0, len(ended)+len(questions))
	for _, q := range ended {
		if m, ok := c.ending(q); ok {
			out = append(out, m)
		}
	}
	bySession := map[string]*pending.Question{}
	for _, q := range questions {
		if first := bySession[q.SessionID]; first == nil || q.ID < first.ID {
			bySession[q.SessionID] = q
		}
	}
	for sessionID, first := range bySession {
		shown := first
		if id, ok := c.shown[sessionID]; ok {
			if i := slices.IndexFunc(questions, func(q *pending.Question) bool { return q.ID == id }); i >= 0 {
				shown = questions[i]
			}
		}
		c.shown[sessionID] = shown.ID
		if m, ok := c.message(shown.Directory, wire.EventAsked, wire.ToQuestionRequest(shown)); ok {
			out = append(out, m)
		}
	}
	return out
}

// Close stops the timers of later announcements; nothing is scheduled after.
func (c *Console) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for t := range c.timers {
		t.Stop()
	}
	clear(c.timers)
}

// after runs fn once consoleNextDelay has passed, unless close comes first.
// The caller holds c.mu.
func (c *Console) after(fn func()) {
	if c.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(consoleNextDelay, func() {
		c.mu.Lock()
		delete(c.timers, t)
		c.mu.Unlock()
		fn()
	})
	c.timers[t] = struct{}{}
}

// publishMessage publishes q's history message and its parts as they are now.
func (c *Console) publishMessage(q *pending.Question) {
	m := questionMessage(q)
	c.publish(q.Directory, eventMessageUpdated, messageUpdatedEvent{SessionID: q.SessionID, Info: m.Info})
	now := time.Now().UnixMilli()
	for _, part := range m.Parts {
		c.publish(q.Directory, eventPartUpdated, partUpdatedEvent{SessionID: q.SessionID, Part: part, Time: now})
	}
}

// publishSession publishes q's session as it is now, busy or idle, and
// reports whether it still has a pending question. busy says that it has,
// without looking. A session's summary is read from the store once and then
// kept up to date here, so an event costs what the session has pending, not
// everything it retains.
func (c *Console) publishSession(q *pending.Question, busy bool) bool {
	sm := c.summaries[q.SessionID]
	if sm != nil && time.Since(sm.loaded) > summaryRefresh && !c.stillHeld(sm.first.ID) {
		sm = nil // its first question is gone: the title and dates move on
	}
	if sm == nil {
		sessions, err := c.sessions(context.Background(), pending.Filter{SessionID: q.SessionID})
		if err != nil || len(sessions) == 0 {
			return busy
		}
		sm = sessions[0].summary()
		sm.loaded = time.Now()
		if len(c.summaries) >= maxSummaries {
			clear(c.summaries) // rebuilt on demand; the bound keeps memory flat
		}
		c.summaries[q.SessionID] = sm
	} else {
		sm.add(q)
	}
	waiting := busy
	if !busy {
		questions, err := c.list(pending.Filter{SessionID: q.SessionID})
		waiting = err != nil || len(questions) > 0
	}
	c.publish(q.Directory, eventSessionUpdated, sessionUpdatedEvent{SessionID: sm.id, Info: sm.info(c.version, waiting)})
	status := "idle"
	if waiting {
		status = "busy"
	}
	c.publish(q.Directory, eventSessionStatus, sessionStatusEvent{SessionID: sm.id, Status: sessionStatus{Type: status}})
	if !waiting {
		c.publish(q.Directory, eventSessionIdle, sessionIDEvent{SessionID: sm.id})
	}
	return waiting
}

// stillHeld reports whether the store still has question id, pending or
// retained. On a replica it asks what this replica holds: a miss there is
// no reason to wait for the other replicas' changes.
func (c *Console) stillHeld(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	_, err := c.store.Peek(ctx, id) // never waits for the other replicas under c.mu
	return err == nil
}

func (c *Console) list(f pending.Filter) ([]*pending.Question, error) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	questions, err := c.store.List(ctx, c.streams.ListFilter(f))
	if err != nil {
		c.log.Warn("could not list pending questions for consoles", zap.Error(err))
	}
	return c.streams.AsLogged(questions, f), err
}

func (c *Console) publish(directory, typ string, properties any) {
	c.streams.Publish(context.Background(), directory, sse.Console, typ, properties)
}

// ending is q's question.replied or question.rejected, for a console.
func (c *Console) ending(q *pending.Question) (sse.Message, bool) {
	typ, properties := wire.EndingEvent(q)
	return c.message(q.Directory, typ, properties)
}

func (c *Console) message(directory, typ string, properties any) (sse.Message, bool) {
	body, err := wire.MarshalJSON(properties)
	if err != nil {
		c.log.Warn("could not encode an event", zap.String("type", typ), zap.Error(err))
		return sse.Message{}, false
	}
	return sse.Message{Directory: directory, Audience: sse.Console, Event: sse.Event{Type: typ, Properties: body}}, true
}

// oldest is the question asked first; ids ascend with creation.
func oldest(questions []*pending.Question) *pending.Question {
	first := questions[0]
	for _, q := range questions[1:] {
		if q.ID < first.ID {
			first = q
		}
	}
	return first
}

// askerName names who asks in a toast: the agent's token name, else its MCP
// client's name, else "an agent".
func askerName(q *pending.Question) string {
	switch {
	case q.Owner != "":
		return q.Owner
	case q.Client != "":
		return q.Client
	}
	return "an agent"
}

// The console hears of questions as a listener does, through httpapi's
// Events rather than ask.Announcements directly: Events puts the standard
// streams' question.asked before the console's share, and lets the
// console publish every ending, so that an ending goes out before the next
// question of its session on every stream.
var _ ask.Listener = (*Console)(nil)
