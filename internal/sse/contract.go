package sse

// CONTRACT FILE — the exported API that the rest of questiond codes against.
// The implementation replaces the stub bodies (and may move declarations into
// files grouped by what they do); names, signatures and documented behaviour stay.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Errors returned by Publish.
var (
	ErrClosed     = errors.New("event broker closed")
	ErrEmptyEvent = errors.New("event has no type or no properties")
)

// Event is OpenCode's bus event, the /event frame: {"id","type","properties"}.
type Event struct {
	ID         string          `json:"id"` // "evt_…"; Publish assigns one when empty
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"` // compact JSON object, never empty
}

// Message is an event and the directory it belongs to.
type Message struct {
	// Directory "" means the event is not tied to a directory and goes to
	// every /event stream; otherwise it goes to /event streams of that
	// directory and to streams that gave no directory.
	Directory string
	Event     Event
}

// Defaults for Options.
const (
	DefaultHeartbeat    = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultQueueLength  = 256
	DefaultMaxScopes    = 1024
	DefaultProject      = "global"
)

// Options configure a Broker. Zero values mean the defaults.
type Options struct {
	Heartbeat    time.Duration // server.heartbeat period on every stream
	WriteTimeout time.Duration // a frame not written within it cuts that subscriber off
	QueueLength  int           // frames queued per subscriber before it is cut off
	MaxScopes    int           // distinct directories with an /event stream; more get 503
	Project      string        // "project" of /global/event frames
	Logger       *zap.Logger   // nil means zap.NewNop()
}

// Broker fans events out to Server-Sent Event subscribers, on top of
// github.com/r3labs/sse/v2, configured and wrapped so none of its known
// pitfalls can happen.
type Broker struct{}

// New returns a running broker (heartbeats start at once).
func New(opts Options) (*Broker, error) { panic("unimplemented") }

// Publish sends m to every matching subscriber. It never waits for a
// subscriber: a subscriber that cannot keep up is cut off instead. It assigns
// an evt_ id when m.Event.ID is empty; the same id is used on /event and
// /global/event.
func (b *Broker) Publish(ctx context.Context, m Message) error { panic("unimplemented") }

// ServeEvent serves GET /event for directory ("" = every directory) with
// {"id","type","properties"} frames. The first frame is server.connected,
// then the messages returned by initial (called once the subscriber is
// registered, so nothing published afterwards is missed), then live events
// and heartbeats. It returns when the client goes away or the broker closes.
func (b *Broker) ServeEvent(w http.ResponseWriter, r *http.Request, directory string, initial func() []Message) {
	panic("unimplemented")
}

// ServeGlobal serves GET /global/event with {"directory","project","payload"}
// frames (server.connected and server.heartbeat carry only "payload"), the
// same way as ServeEvent.
func (b *Broker) ServeGlobal(w http.ResponseWriter, r *http.Request, initial func() []Message) {
	panic("unimplemented")
}

// Subscribers returns the number of connected subscribers.
func (b *Broker) Subscribers() int { panic("unimplemented") }

// Close ends every stream cleanly and stops heartbeats; it returns once every
// handler has returned or ctx ends.
func (b *Broker) Close(ctx context.Context) error { panic("unimplemented") }
