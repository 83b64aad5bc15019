package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/pending"
)

// handleQuestionList serves GET /question: pending questions in the caller's
// directory scope, oldest first.
func (s *Server) handleQuestionList(w http.ResponseWriter, r *http.Request) {
	dir, err := wire.RequestDirectory(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := s.questionList(r.Context(), dir)
	if errors.Is(err, errUnencodable) {
		s.log.Error("listing questions", zap.Error(err))
		wire.WriteJSONBytes(w, http.StatusInternalServerError, wire.UnencodableBody)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wire.WriteJSONBytes(w, http.StatusOK, body)
}

// questionID reads and checks the {requestID} path parameter.
func questionID(r *http.Request) (string, error) { return pathQuestionID(r, "requestID") }

// pathQuestionID reads the question id in path parameter param, checked as
// OpenCode checks it: a string starting with "que".
func pathQuestionID(r *http.Request, param string) (string, error) {
	id := chi.URLParam(r, param)
	if !strings.HasPrefix(id, ident.Question) {
		quoted, _ := json.Marshal(id)
		return "", wire.NewBadRequest(wire.KindParams, "Expected a string starting with \"que\", got %s\n  at [%q]", quoted, param)
	}
	return id, nil
}

// handleQuestionReply serves POST /question/{requestID}/reply. The answers are
// validated against the question's schema before anything changes: a bad
// answer is a 400 that names the question, and the question stays pending.
// Checks run in OpenCode's order: path, body, then the lookup.
func (s *Server) handleQuestionReply(w http.ResponseWriter, r *http.Request) {
	id, err := questionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readJSONBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	answers, err := decodeAnswers(body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := s.pendingQuestion(r, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.questions.Reply(r.Context(), q, answers); err != nil {
		s.writeError(w, r, s.notFoundAs(err, id))
		return
	}
	wire.WriteJSON(w, http.StatusOK, true)
}

// handleQuestionReject serves POST /question/{requestID}/reject. OpenCode
// sends no body; questiond reads an optional {"action":"decline"} so an
// operator can tell the agent "no" rather than "not now" (cancel, the default).
// A body that is not JSON is ignored, as OpenCode ignores it.
func (s *Server) handleQuestionReject(w http.ResponseWriter, r *http.Request) {
	id, err := questionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	action, err := rejectAction(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.pendingQuestion(r, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.questions.Reject(r.Context(), id, action); err != nil {
		s.writeError(w, r, s.notFoundAs(err, id))
		return
	}
	wire.WriteJSON(w, http.StatusOK, true)
}

func rejectAction(w http.ResponseWriter, r *http.Request, limit int64) (string, error) {
	body, err := readJSONBody(w, r, limit)
	if err != nil {
		if _, ok := err.(*wire.UnsupportedMediaType); ok {
			return pending.ActionCancel, nil // ignored, like any body OpenCode gets here
		}
		return "", err
	}
	var parsed struct {
		Action *json.RawMessage `json:"action"`
	}
	if len(body) == 0 || json.Unmarshal(body, &parsed) != nil || parsed.Action == nil {
		return pending.ActionCancel, nil
	}
	var action string
	_ = json.Unmarshal(*parsed.Action, &action)
	switch action {
	case pending.ActionDecline, pending.ActionCancel:
		return action, nil
	}
	return "", wire.NewBadRequest(wire.KindPayload, "Expected \"decline\" or \"cancel\", got %s\n  at [\"action\"]", excerpt(*parsed.Action))
}

// pendingQuestion finds a question that is still pending, in the caller's
// directory scope; anything else is the same 404 as an unknown id. A reply
// or reject for a question that has ended comes from a client that missed
// the ending (questiond restarted meanwhile, say), so, while the store still
// retains the question, its ending is published again: the client stops
// showing it instead of keeping a panel nothing can close. In front of an
// OpenCode server, one the store has forgotten is said rejected, where
// questiond still knows its session (Events.RepeatForgotten).
func (s *Server) pendingQuestion(r *http.Request, id string) (*pending.Question, error) {
	dir, err := wire.RequestDirectory(r)
	if err != nil {
		return nil, err
	}
	q, err := s.store.Get(r.Context(), id)
	if isNotFound(err) {
		s.events.RepeatForgotten(id)
	}
	if err != nil {
		return nil, s.notFoundAs(err, id)
	}
	if !(pending.Filter{Directory: dir}).Matches(q) {
		return nil, &wire.NotFound{ID: id}
	}
	if q.Ended != nil {
		s.questions.RepeatEnding(q)
		return nil, &wire.NotFound{ID: id}
	}
	return q, nil
}

// notFoundAs names id in a store's not-found error.
func (s *Server) notFoundAs(err error, id string) error {
	if isNotFound(err) {
		return fmt.Errorf("%w", &wire.NotFound{ID: id})
	}
	return err
}
