package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/questiond/questiond/internal/ident"
)

// Errors returned by Publish.
var (
	ErrClosed     = errors.New("event broker closed")
	ErrEmptyEvent = errors.New("event has no type or no properties")
	// ErrInvalidEvent wraps the reason an event cannot be sent: properties
	// that are not one JSON object, or an id without the evt_ prefix.
	ErrInvalidEvent = errors.New("invalid event")
)

// Why ServeEvent and ServeGlobal refuse a stream, besides ErrClosed.
var (
	// ErrTooManyScopes wraps the refusal of a directory beyond
	// Options.MaxScopes.
	ErrTooManyScopes = errors.New("too many directories with event streams")
	// ErrCannotFlush is a ResponseWriter without http.Flusher: a middleware
	// that wraps it hides the method, and frames would sit in its buffer.
	ErrCannotFlush = errors.New("the ResponseWriter cannot flush")
)

// Event is OpenCode's bus event, the /event frame: {"id","type","properties"}.
type Event struct {
	ID         string          `json:"id"` // "evt_…"; Publish assigns one when empty
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"` // compact JSON object, never empty
}

// Message is an event, the directory it belongs to and the kind of stream
// it is for.
type Message struct {
	// Directory "" means the event is not tied to a directory and goes to
	// every /event stream; otherwise it goes to /event streams of that
	// directory and to streams that gave no directory.
	Directory string
	Event     Event
	// Audience is the kind of stream the message goes to; the zero value
	// means every kind.
	Audience Audience
	// Note is for the Filter of a stream (Frame.Note), which cannot tell
	// from the frame alone; the broker does nothing with it.
	Note string
}

// Audience is a kind of stream. questiond shows the OpenCode TUI, which
// renders some things differently from every other client, its own view of
// the same questions: a message can go to every stream, to consoles only,
// or to every stream but consoles.
type Audience uint8

const (
	// Everyone is every stream.
	Everyone Audience = iota
	// Standard is every stream that is not a console's.
	Standard
	// Console is the streams of the OpenCode TUI.
	Console
)

// reaches reports whether a message for a goes to a stream of kind stream.
func (a Audience) reaches(stream Audience) bool {
	return a == Everyone || a == stream
}

func (a Audience) String() string {
	switch a {
	case Everyone:
		return "everyone"
	case Standard:
		return "standard"
	case Console:
		return "console"
	}
	return fmt.Sprintf("audience(%d)", uint8(a))
}

// Types of the events the broker sends on its own.
const (
	typeConnected = "server.connected"
	typeHeartbeat = "server.heartbeat"
)

var emptyObject = json.RawMessage(`{}`)

// brokerEvent is a fresh server.connected or server.heartbeat event.
func brokerEvent(typ string) Event {
	return Event{ID: ident.Ascending(ident.Event), Type: typ, Properties: emptyObject}
}

// prepare checks e and gives it an id when it has none. An event without a
// type or properties is refused: OpenCode clients cannot route it.
func prepare(e *Event) error {
	if e.Type == "" {
		return ErrEmptyEvent
	}
	props := bytes.TrimSpace(e.Properties)
	if len(props) == 0 || bytes.Equal(props, []byte("null")) {
		return fmt.Errorf("event %q: %w", e.Type, ErrEmptyEvent)
	}
	if props[0] != '{' {
		return fmt.Errorf("%w: properties of %q are not a JSON object", ErrInvalidEvent, e.Type)
	}
	if e.ID == "" {
		e.ID = ident.Ascending(ident.Event)
	} else if !ident.HasPrefix(e.ID, ident.Event) {
		return fmt.Errorf("%w: id %q of %q does not start with %s_", ErrInvalidEvent, e.ID, e.Type, ident.Event)
	}
	return nil
}
