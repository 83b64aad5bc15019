package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi/console"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// replayTimeout bounds the listing of pending questions for a new stream.
const replayTimeout = 5 * time.Second

// handleEvent serves GET /event (and /events): OpenCode's per-directory stream.
func (s *Server) handleEvent(w http.ResponseWriter, r *http.Request) {
	dir, err := wire.RequestDirectory(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.serveStream(w, r, func(r *http.Request) error {
		audience, initial := s.streamView(r, dir)
		if s.upstream != nil {
			r = s.gatedForTUI(r)
			return s.serveMerged(w, r, "/event", func(feed sse.Feed) error {
				return s.events.bus.ServeEventMerged(w, r, dir, audience, initial, feed)
			})
		}
		return s.events.bus.ServeEvent(w, r, dir, audience, initial)
	})
}

// handleGlobalEvent serves GET /global/event: every directory, wrapped.
func (s *Server) handleGlobalEvent(w http.ResponseWriter, r *http.Request) {
	s.serveStream(w, r, func(r *http.Request) error {
		audience, initial := s.streamView(r, "")
		if s.upstream != nil {
			r = s.gatedForTUI(r)
			return s.serveMerged(w, r, "/global/event", func(feed sse.Feed) error {
				return s.events.bus.ServeGlobalMerged(w, r, audience, initial, feed)
			})
		}
		return s.events.bus.ServeGlobal(w, r, audience, initial)
	})
}

// streamView is the kind of stream r opens and its first frames: the
// OpenCode TUI gets the console's view (see console.Console), every other client
// every pending question of its scope.
func (s *Server) streamView(r *http.Request, dir string) (sse.Audience, func() []sse.Message) {
	if console.IsConsole(r) {
		if s.upstream != nil {
			return sse.Console, s.pendingAsked(dir) // the TUI's own audience, for toasts; the server answers its console
		}
		return sse.Console, s.console.Replay
	}
	return sse.Standard, s.pendingAsked(dir)
}

// serveStream runs serve in one of the operators' stream slots (agents'
// MCP streams have their own), unless questiond is shutting down or every
// slot is taken, and answers a stream the bus refused. The slot is held until the stream is over, which may be after
// serve returned: the bus releases it (see sse.WithStreamEnd).
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, serve func(*http.Request) error) {
	if s.questions.Draining() {
		s.writeError(w, r, wire.ErrShuttingDown)
		return
	}
	release, err := s.streamSlot()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := serve(sse.WithStreamEnd(r, release)); err != nil {
		s.writeError(w, r, streamRefused(err))
	}
}

// streamRefused is the answer to a stream the bus refused: 503 while it
// closes or when new directories are over --max-directories; anything else
// (a middleware that hides http.Flusher) is questiond's own fault, a 500.
func streamRefused(err error) error {
	switch {
	case errors.Is(err, sse.ErrClosed):
		return wire.ErrShuttingDown
	case errors.Is(err, sse.ErrFeed):
		// In front of an OpenCode server: its stream failed before its first frame.
		return wire.NewStatus(http.StatusBadGateway, "BadGateway", "the OpenCode server's event stream: "+err.Error())
	case errors.Is(err, sse.ErrTooManyScopes):
		return wire.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable",
			err.Error()+"; try again once a stream of another directory ends (--max-directories)")
	default:
		return fmt.Errorf("event stream refused: %w", err)
	}
}

// pendingAsked returns the first frames of a new stream: question.asked for
// every question still pending in its scope. OpenCode's own TUI never lists
// questions when it attaches, so without these it would never show them.
func (s *Server) pendingAsked(dir string) func() []sse.Message {
	return func() []sse.Message {
		ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
		defer cancel()
		f := pending.Filter{Directory: dir}
		questions, err := s.store.List(ctx, s.events.listFilter(f))
		if err != nil {
			s.log.Warn("could not list pending questions for a new stream", zap.Error(err))
			return nil
		}
		questions = s.events.asLogged(questions, f)
		byCreation(questions)
		if s.upstream != nil {
			for _, q := range questions { // asked before this process started, maybe
				s.events.shown.remember(q)
			}
		}
		return askedMessages(questions)
	}
}
