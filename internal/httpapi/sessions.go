package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi/middleware"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// sessionBody is the body of PUT /sessions/{sessionID}.
type sessionBody struct {
	QuestionCapability *string `json:"questionCapability"`
	ParentSessionID    string  `json:"parentSessionID"`
}

// sessionView is what the session routes answer.
type sessionView struct {
	ID                 string             `json:"id"`
	QuestionCapability session.Capability `json:"questionCapability"`
	ParentSessionID    string             `json:"parentSessionID,omitempty"`
	Configured         bool               `json:"configured"`
}

func toSessionView(s session.Session) sessionView {
	return sessionView{ID: s.ID, QuestionCapability: s.Capability, ParentSessionID: s.ParentID, Configured: s.Configured}
}

// pathSessionID reads and checks the {sessionID} path parameter.
func pathSessionID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "sessionID")
	if !session.ValidID(id) {
		quoted, _ := json.Marshal(id)
		return "", wire.NewBadRequest(wire.KindParams, "Expected a session id like \"ses_…\" (letters, digits, _ or -, at most 104 characters), got %s\n  at [\"sessionID\"]", quoted)
	}
	return id, nil
}

// handleSessionPut serves PUT /sessions/{sessionID}: set the session's one
// question capability.
func (s *Server) handleSessionPut(w http.ResponseWriter, r *http.Request) {
	id, err := pathSessionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readOwnJSONBody(w, r, s.opts.MaxBodyBytes, `{"questionCapability":"user"}`)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rec, err := decodeSessionBody(id, body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	owner := sessionOwner(r.Context())
	if err := s.questions.OthersInbox(id, owner); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.questions.InboxAsParent(rec); err != nil {
		s.writeError(w, r, err)
		return
	}
	for _, named := range []struct{ id, field string }{{id, "sessionID"}, {rec.ParentID, "parentSessionID"}} {
		if err := s.heldByAnother(r.Context(), named.id, owner, named.field); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	stored, created, err := s.sessions.Put(r.Context(), rec, owner)
	if err != nil {
		s.writeError(w, r, wire.SessionError(err, id))
		return
	}
	fields := []zap.Field{zap.String("session", id), zap.String("capability", string(stored.Capability))}
	if stored.ParentID != "" {
		fields = append(fields, zap.String("parent", stored.ParentID))
	}
	if owner == session.Operator {
		fields = append(fields, zap.Bool("byOperator", true))
	}
	s.log.Info("session question capability set", fields...)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	wire.WriteJSON(w, status, toSessionView(stored))
}

// heldByAnother refuses agent's record for session id (named by field)
// while the session lists another agent's questions, pending or retained.
// Questions asked since sessions are claimed (Store.Claim) made the session
// their agent's already; this covers those asked before, by an earlier
// version, which no claim records.
func (s *Server) heldByAnother(ctx context.Context, id, agent, field string) error {
	if id == "" || agent == "" || agent == session.Operator {
		return nil
	}
	list, err := s.store.List(ctx, pending.Filter{SessionID: id, Ended: true})
	if err != nil {
		return err
	}
	for _, q := range list {
		if q.Owner != "" && q.Owner != agent {
			return wire.SessionError(&session.OwnedError{ID: id, Owner: q.Owner, Field: field}, id)
		}
	}
	return nil
}

// decodeSessionBody reads the PUT body strictly: every key known, every
// value of the right type, and a valid combination.
func decodeSessionBody(id string, body []byte) (session.Session, error) {
	members, err := decodeObject(body)
	if err != nil {
		return session.Session{}, err
	}
	for key := range members {
		if key != "questionCapability" && key != "parentSessionID" {
			return session.Session{}, wire.NewBadRequest(wire.KindPayload, "Unknown key: expected \"questionCapability\" and optionally \"parentSessionID\"\n  at [%q]", key)
		}
	}
	var b sessionBody
	if err := json.Unmarshal(body, &b); err != nil {
		return session.Session{}, typeError(err, "")
	}
	if b.QuestionCapability == nil {
		return session.Session{}, wire.NewBadRequest(wire.KindPayload, "Missing key: expected \"user\", \"parent\" or \"none\"\n  at [\"questionCapability\"]")
	}
	rec := session.Session{ID: id, Capability: session.Capability(*b.QuestionCapability), ParentID: b.ParentSessionID}
	if raw, ok := members["parentSessionID"]; ok && string(raw) == "null" {
		rec.ParentID = ""
	}
	if err := rec.Validate(); err != nil {
		return session.Session{}, wire.SessionError(err, id)
	}
	return rec, nil
}

// handleSessionGet serves GET /sessions/{sessionID}: the capability in
// force, the default for a session nobody configured.
func (s *Server) handleSessionGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathSessionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rec, err := s.sessions.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, wire.SessionError(err, id))
		return
	}
	wire.WriteJSON(w, http.StatusOK, toSessionView(rec))
}

// handleSessionDelete serves DELETE /sessions/{sessionID}: forget the
// record, so the default applies again.
func (s *Server) handleSessionDelete(w http.ResponseWriter, r *http.Request) {
	id, err := pathSessionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	owner := sessionOwner(r.Context())
	if err := s.questions.OthersInbox(id, owner); err != nil {
		s.writeError(w, r, err)
		return
	}
	old, err := s.sessions.Delete(r.Context(), id, owner)
	if err != nil {
		s.writeError(w, r, wire.SessionError(err, id))
		return
	}
	s.log.Info("session question capability removed", zap.String("session", id), zap.Bool("byOperator", owner == session.Operator))
	wire.WriteJSON(w, http.StatusOK, toSessionView(old))
}

// sessionOwner is who a session route acts for: the calling agent ("" for
// anonymous agents), or session.Operator for operator credentials, who may
// change any session.
func sessionOwner(ctx context.Context) string {
	c := middleware.CallerFrom(ctx)
	if c.Role == middleware.RoleOperator {
		return session.Operator
	}
	return c.Agent
}
