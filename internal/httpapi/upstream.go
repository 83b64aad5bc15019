package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi/console"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/overlay"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/ui/inline"
)

// In front of an OpenCode server (Options.Upstream), questiond answers
// only what is its own: the agents' routes, the operators' question routes
// for its own questions (merged with the server's where a client lists or
// watches them), its page and /mcp for agents. Everything else goes to the
// server as it is, for operators only: an agent never reaches it.

// overlayOperatorRoutes wires the operators' question routes over the
// server's: lists merged, replies to questiond's own ids answered here and
// the rest forwarded.
func (s *Server) overlayOperatorRoutes(r chi.Router) {
	r.Get("/question", s.handleOverlayQuestionList)
	r.Post("/question/{requestID}/reply", s.ownQuestionOr(s.handleQuestionReply))
	r.Post("/question/{requestID}/reject", s.ownQuestionOr(s.handleQuestionReject))
}

// handleOverlayQuestionList serves GET /question: the server's pending
// questions and questiond's, each filtered by the caller's directory as its
// server filters them, oldest first.
func (s *Server) handleOverlayQuestionList(w http.ResponseWriter, r *http.Request) {
	dir, err := wire.RequestDirectory(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	theirs, err := s.upstream.Questions(r)
	var refused *overlay.StatusError
	if errors.As(err, &refused) {
		refused.Write(w) // the server's own refusal (a bad directory, its credentials): as it came
		return
	}
	if err != nil {
		s.writeError(w, r, upstreamError(err))
		return
	}
	ours, err := s.questionList(r.Context(), dir)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	merged, err := overlay.MergeLists(theirs, ours)
	if err != nil {
		s.writeError(w, r, upstreamError(err))
		return
	}
	wire.WriteJSONBytes(w, http.StatusOK, merged)
}

// ownQuestionOr answers a request about one of questiond's questions with
// own, and forwards every other to the server. questiond knows its ids by
// their tag (ident.Issued), so a late reply to a question it has forgotten
// is still answered here (404) instead of going to a server that never
// knew it; ids from before tags are found in the store.
func (s *Server) ownQuestionOr(own http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "requestID")
		if ident.Issued(id) {
			own(w, r)
			return
		}
		if _, err := s.store.Peek(r.Context(), id); err == nil {
			own(w, r)
			return
		}
		s.forwardAs.ServeHTTP(w, r) // its route's guard admitted the operator
	}
}

// serveMerged serves an event stream that carries the server's stream at
// path frame by frame, questiond's events between its frames (serve runs
// the broker with the server's frames as its feed). The server's refusal
// reaches the client as it came; a server that does not answer is a 502.
// The server's stream outlives the request's handler (the broker may take
// the connection over), so it ends when the broker closes it, not with
// the handler.
func (s *Server) serveMerged(w http.ResponseWriter, r *http.Request, path string, serve func(sse.Feed) error) error {
	query := r.URL.Query()
	query.Del("auth_token")
	var header http.Header
	if dir := r.Header.Values("x-opencode-directory"); len(dir) > 0 {
		header = http.Header{"X-Opencode-Directory": dir}
	}
	feed, err := s.upstream.RelayStream(context.WithoutCancel(r.Context()), path, query, header)
	var refused *overlay.StatusError
	switch {
	case errors.As(err, &refused):
		refused.Write(w)
		return nil
	case err != nil:
		s.writeError(w, r, upstreamError(err))
		return nil
	}
	return serve(feed)
}

// gatedForTUI returns r, a stream's request, carrying the gate of the
// OpenCode TUI's streams when it is the TUI's: one question per session
// tree announced at a time, whichever server asked it (see overlay.Gate).
// Every other stream gets every question as it comes.
func (s *Server) gatedForTUI(r *http.Request) *http.Request {
	if !console.IsConsole(r) {
		return r
	}
	return sse.WithFilter(r, overlay.NewGate(s.upstream))
}

// gateNote is the note of q's question.asked for the TUI's gate: one not
// filed in the server's sessions is never held (the TUI cannot show it).
func gateNote(q *pending.Question) string {
	if q.Hosted {
		return ""
	}
	return overlay.NotHosted
}

// upstreamError is the one place the overlay's errors become HTTP errors:
// a server that did not answer is a 502 naming it.
func upstreamError(err error) error {
	if errors.Is(err, overlay.ErrUnreachable) {
		return wire.NewStatus(http.StatusBadGateway, "BadGateway", err.Error())
	}
	return err
}

// upstreamFailed answers a request the server did not answer.
func (s *Server) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Warn("forwarding to the OpenCode server failed", zap.Error(err))
	s.writeError(w, r, upstreamError(err))
}

// hosted is the server as the question service places questions in its
// sessions, or nil without one.
func hosted(up *overlay.Upstream) ask.Hosted {
	if up == nil {
		return nil // not a nil *Upstream in an interface
	}
	return up
}

// eventToastShow asks the OpenCode TUI to show a toast.
const eventToastShow = "tui.toast.show"

// toast is tui.toast.show's properties.
type toast struct {
	Title    string `json:"title,omitempty"`
	Message  string `json:"message"`
	Variant  string `json:"variant"`
	Duration int    `json:"duration,omitempty"` // ms
}

// unshownToast tells the TUI of a question it cannot show: one filed in a
// session the OpenCode server does not have (an agent's inbox, an MCP
// session), which only questiond's page and webhooks show.
func unshownToast(q *pending.Question) toast {
	who := cmp.Or(q.Owner, q.Client, "an agent")
	what := wire.OneLine(inline.Plain(strings.Join(strings.Fields(q.Message), " ")), toastMessageRunes)
	return toast{
		Title:    "Question from " + wire.OneLine(who, toastMessageRunes),
		Message:  what + " — not in an OpenCode session: answer it on questiond's page (/ui)",
		Variant:  "info",
		Duration: 10000,
	}
}

// toastMessageRunes bounds the asker's text in a toast: a toast is a line
// or two.
const toastMessageRunes = 120
