package ask

import (
	"context"
	"fmt"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// Hosted are the sessions of a server questiond stands in front of (an
// OpenCode server, with --upstream). They are that server's operator's:
// any agent may ask in one and none claims it (a record the operator put
// still refuses, when its capability is "none"), and a question asked in
// one is filed where the server's clients show it.
type Hosted interface {
	// Place says where a question asked in session sessionID ("" for
	// none) is filed, or, when the server does not have that session,
	// during which call of the MCP tool tool (nil: none known) it was
	// asked. ok is false when the server knows neither: questiond files the
	// question itself then. An error is the server failing to answer.
	Place(ctx context.Context, sessionID string, tool *pending.MCPTool) (p Placement, ok bool, err error)
}

// Placement is where the server's clients show a question.
type Placement struct {
	SessionID string // the session it is filed in
	Directory string // that session's directory
	// Tool is the assistant message and tool call it belongs to, when the
	// server told of the call that asks; nil otherwise.
	Tool *pending.Tool
}

// HostedError is the server questiond stands in front of failing to say
// where a question goes: nothing was asked.
type HostedError struct{ Err error }

func (e *HostedError) Error() string {
	return fmt.Sprintf("finding the session in the OpenCode server: %v; nothing was asked", e.Err)
}

func (e *HostedError) Unwrap() error { return e.Err }

// placed is where a question goes: route, and whether it is filed in a
// session of the hosting server.
type placed struct {
	session.Route
	hosted bool
}

// place routes r: through the hosting server where it has r's session
// (or the call that asks), else by questiond's own sessions (route). A
// question bound to one capability (only) is questiond's to route.
func (s *Service) place(ctx context.Context, r *Request) (placed, error) {
	hosted := s.opts.Hosted
	if hosted == nil || r.Only != "" || s.isInbox(r.SessionID) {
		route, err := s.route(ctx, r.SessionID, r.Owner, r.Only)
		return placed{Route: route}, err
	}
	p, ok, err := hosted.Place(context.WithoutCancel(ctx), r.SessionID, r.MCPTool)
	if err != nil {
		return placed{}, &HostedError{Err: err}
	}
	if !ok {
		route, err := s.route(ctx, r.SessionID, r.Owner, r.Only)
		return placed{Route: route}, err
	}
	for _, id := range []string{r.SessionID, p.SessionID} {
		if id == "" {
			continue
		}
		rec, err := s.sessions.Get(ctx, id)
		if err != nil {
			return placed{}, &SessionError{ID: id, Err: err}
		}
		if rec.Capability == session.None {
			return placed{}, &ForbiddenError{Message: fmt.Sprintf(
				"session %s may not ask questions: its question capability is \"none\"; continue with your best judgment", id)}
		}
	}
	r.Directory = p.Directory
	if r.Tool == nil {
		r.Tool = p.Tool
	}
	route := placed{Route: session.Route{ListedUnder: p.SessionID}, hosted: true}
	if r.SessionID != "" && r.SessionID != p.SessionID {
		route.Asking = r.SessionID
	}
	return route, nil
}

// isInbox reports whether id names an agent's inbox (the anonymous one's
// included): questiond's own, never a hosting server's.
func (s *Service) isInbox(id string) bool {
	if id == "" {
		return false
	}
	_, ok := s.inboxes[id]
	return ok || id == Inbox("")
}
