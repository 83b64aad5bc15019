package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/duration"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi/middleware"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// ask validates p and asks through the service for agent owner ("":
// anonymous), bound to one capability (only, when not empty) and showing operators
// shown instead of the questions built from the schema when it is not nil.
// It returns once the question is stored and question.asked published.
func (s *Server) ask(ctx context.Context, owner string, p *createParams, only session.Capability, shown []elicit.QuestionInfo) (*pending.Question, bool, error) {
	return s.questions.Ask(ctx, ask.Request{
		Owner:       owner,
		Client:      p.client,
		Key:         p.key.key,
		Fingerprint: p.key.hash,
		Form:        p.form,
		Only:        only,
		Shown:       shown,
		Check: func(r *ask.Request) error {
			v, err := s.validate(p)
			if err != nil {
				return err
			}
			r.SessionID, r.Title, r.Directory, r.Message, r.Schema, r.Tool, r.MCPTool, r.Timeout = v.sessionID, v.title, v.directory, v.message, v.schema, v.tool, v.mcpTool, v.timeout
			return nil
		},
	})
}

// handleElicitationCreate serves POST /elicitations: store, announce, and
// answer 201 at once; the agent collects the result with GET /elicitations/{id}.
// A retry with the Idempotency-Key of an earlier create gets 201 with that
// elicitation as it is now.
func (s *Server) handleElicitationCreate(w http.ResponseWriter, r *http.Request) {
	key, err := parseIdempotencyKey(r.Header)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readOwnJSONBody(w, r, s.opts.MaxBodyBytes, elicitationExample)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	params, _, err := parseCreateBody(body)
	if err != nil {
		s.writeError(w, r, rpcAsBadRequest(err))
		return
	}
	s.unknown.note(params.unknown, routeElicitations, middleware.CallerFrom(r.Context()).Agent)
	params.key = newRequestKey(key, routeElicitations, params)
	q, replayed, err := s.ask(r.Context(), middleware.CallerFrom(r.Context()).Agent, params, "", nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	w.Header().Set("Location", "/elicitations/"+q.ID)
	wire.WriteJSON(w, http.StatusCreated, toElicitation(q))
}

// elicitationID reads and checks the {id} path parameter.
func elicitationID(r *http.Request) (string, error) { return pathQuestionID(r, "id") }

// handleElicitationGet serves GET /elicitations/{id}[?wait=30s]: the
// elicitation as it is, or, with wait, as soon as it ends within that time.
func (s *Server) handleElicitationGet(w http.ResponseWriter, r *http.Request) {
	id, err := elicitationID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wait, err := s.parseWait(r.URL.Query().Get("wait"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := s.store.Get(r.Context(), id)
	if err == nil && !ownedBy(r, q.Owner) {
		err = &wire.NotFound{ID: id} // another agent's question is as good as unknown
	}
	if err != nil {
		s.writeError(w, r, s.notFoundAs(err, id))
		return
	}
	if q.Ended == nil && wait > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		ctx, cancelWait := context.WithTimeout(r.Context(), wait)
		ended, err := s.questions.Wait(ctx, id)
		cancelWait()
		switch {
		case err == nil:
			q = ended
		case r.Context().Err() == nil && (errors.Is(err, context.DeadlineExceeded) || s.questions.Released()):
			// The wait ran out, or questiond is stopping: answer with the
			// question as it still is; the agent asks again.
		case r.Context().Err() != nil:
			return // the agent gave up waiting; there is no one to answer
		default:
			s.writeError(w, r, s.notFoundAs(err, id))
			return
		}
	}
	wire.WriteJSON(w, http.StatusOK, toElicitation(q))
}

// parseWait reads the long-poll duration: a Go duration ("30s") or a number
// of seconds, clamped to MaxWait.
func (s *Server) parseWait(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	d, err := duration.Parse(text, duration.Longest)
	if err != nil {
		return 0, wire.NewBadRequest(wire.KindQuery, "Expected a duration such as \"30s\", got %q\n  at [\"wait\"]", text)
	}
	if d < 0 {
		return 0, wire.NewBadRequest(wire.KindQuery, "wait must not be negative, got %q\n  at [\"wait\"]", text)
	}
	return min(d, s.opts.MaxWait), nil
}

// handleElicitationDelete serves DELETE /elicitations/{id}: the agent
// withdraws its question; operators see question.rejected.
func (s *Server) handleElicitationDelete(w http.ResponseWriter, r *http.Request) {
	id, err := elicitationID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if q, err := s.store.Get(r.Context(), id); err == nil && !ownedBy(r, q.Owner) {
		s.writeError(w, r, &wire.NotFound{ID: id}) // another agent's question is as good as unknown
		return
	}
	q, err := s.questions.Settle(r.Context(), id, pending.Outcome{
		Ending: pending.EndWithdrawn,
		Result: pending.Result{Action: pending.ActionCancel},
	})
	if err != nil {
		s.writeError(w, r, s.notFoundAs(err, id))
		return
	}
	wire.WriteJSON(w, http.StatusOK, toElicitation(q))
}

// handleElicit serves POST /elicit: create, wait, and answer with the MCP
// ElicitResult in one call. While it waits it writes a whitespace byte every
// KeepAlive (leading whitespace is valid JSON) so idle timeouts in clients and
// proxies do not cut the call; if the caller goes away, the question is
// withdrawn: at once, or, for a call with an Idempotency-Key, after
// ReconnectGrace unless a retry with that key comes back to wait for it.
func (s *Server) handleElicit(w http.ResponseWriter, r *http.Request) {
	key, err := parseIdempotencyKey(r.Header)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := readOwnJSONBody(w, r, s.opts.MaxBodyBytes, elicitationExample)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	params, rpc, err := parseCreateBody(body)
	var q *pending.Question
	replayed := false
	if err == nil {
		s.unknown.note(params.unknown, routeElicit, middleware.CallerFrom(r.Context()).Agent)
		params.key = newRequestKey(key, routeElicit, params)
		q, replayed, err = s.ask(r.Context(), middleware.CallerFrom(r.Context()).Agent, params, "", nil)
	}
	if err != nil {
		if ask.IsKeyError(err) {
			s.writeError(w, r, err)
			return
		}
		if rpc != nil && rpc.JSONRPC != "" {
			s.writeRPCError(w, r, rpc, err)
			return
		}
		s.writeError(w, r, rpcAsBadRequest(err))
		return
	}
	w.Header().Set("X-Questiond-Request-Id", q.ID)
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	ended, committed, err := q, false, error(nil)
	if q.Ended == nil {
		ended, committed, err = s.waitWithKeepAlive(w, r, q.ID, key != "")
	}
	switch {
	case err == nil:
	case s.questions.Released() && r.Context().Err() == nil:
		if committed {
			// The 200 is already on its way: cut the connection so the
			// client sees an incomplete answer rather than a wrong one.
			panic(http.ErrAbortHandler)
		}
		s.writeError(w, r, wire.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable",
			"questiond is shutting down; question "+q.ID+" stays pending in its durable store: once questiond is back, collect its result with GET /elicitations/"+q.ID))
		return
	default:
		// The caller is gone; nothing can be written any more.
		return
	}
	result := toElicitResult(ended.Ended.Result)
	var out any = result
	if rpc != nil && rpc.JSONRPC != "" {
		out = wire.RPCResponse{JSONRPC: "2.0", ID: rpc.ID, Result: &result}
	}
	writeBody(w, out)
}

// waitWithKeepAlive waits for question id to end. It returns an error when
// the caller went away (after withdrawing the question, or, for a keyed
// caller, leaving it to the grace period) or when Release let go of it;
// committed reports whether keep-alive bytes already sent the 200.
func (s *Server) waitWithKeepAlive(w http.ResponseWriter, r *http.Request, id string, keyed bool) (q *pending.Question, committed bool, err error) {
	gone := false // the caller went away
	if keyed {
		detach := s.questions.Attach(id)
		defer func() { detach(gone) }()
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	done := s.questions.WaitInBackground(ctx, id)
	ticker := time.NewTicker(s.opts.KeepAlive)
	defer ticker.Stop()
	writeFailed := false
	for {
		select {
		case got := <-done:
			switch {
			case got.Err == nil:
				return got.Q, committed, nil
			case s.questions.Released() && r.Context().Err() == nil && !writeFailed:
				return nil, committed, got.Err
			case r.Context().Err() == nil && !writeFailed:
				// The store failed while the caller is still here: end the
				// question so the caller gets a definite answer.
				s.log.Error("waiting for a question failed", zap.String("id", id), zap.Error(got.Err))
				q, err := s.questions.Withdraw(id, pending.EndDisconnected)
				return q, committed, err
			}
			gone = true
			if !keyed && !s.questions.Draining() {
				_, _ = s.questions.Withdraw(id, pending.EndDisconnected)
			}
			return nil, committed, got.Err
		case <-ticker.C:
			w.Header().Set("Content-Type", "application/json")
			if _, err := w.Write([]byte("\n")); err != nil {
				writeFailed = true // the caller is gone, though net/http may not know yet
				cancel()
				continue
			}
			committed = true
			_ = rc.Flush()
		}
	}
}

// writeBody writes v as JSON with status 200, whether or not keep-alive bytes
// already committed the headers.
func writeBody(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		body = []byte(`{"action":"cancel"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// elicitResult is MCP's ElicitResult: content only (and always) for accept.
type elicitResult struct {
	Action  string          `json:"action"`
	Content *elicit.Content `json:"content,omitempty"`
}

func toElicitResult(r pending.Result) elicitResult {
	if r.Action != pending.ActionAccept {
		return elicitResult{Action: r.Action}
	}
	content := r.Content
	if content == nil {
		content = elicit.Content{}
	}
	return elicitResult{Action: r.Action, Content: &content}
}

// writeRPCError answers a JSON-RPC caller with a JSON-RPC error object:
// invalid params for anything the caller got wrong, internal error otherwise.
func (s *Server) writeRPCError(w http.ResponseWriter, r *http.Request, rpc *rpcRequest, err error) {
	err = wire.HTTPError(err)
	var (
		re     *rpcError
		bad    *wire.BadRequest
		schema *elicit.SchemaError
		status *wire.StatusError
	)
	body := wire.RPCErrorBody{Code: wire.RPCInvalidParams, Message: err.Error()}
	switch {
	case errors.As(err, &re):
		body = wire.RPCErrorBody{Code: re.code, Message: re.message}
	case errors.As(err, &bad), errors.As(err, &schema):
	case errors.As(err, &status) && status.Status < 500:
		// Refused for who is asking (a session that may not ask, a limit):
		// the request is not acceptable as it stands.
		body = wire.RPCErrorBody{Code: wire.RPCInvalidRequest, Message: status.Message}
	case errors.As(err, &status):
		body = wire.RPCErrorBody{Code: wire.RPCInternalError, Message: status.Message}
	default:
		s.writeError(w, r, err)
		return
	}
	id := rpc.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	wire.WriteJSON(w, http.StatusOK, wire.RPCResponse{JSONRPC: "2.0", ID: id, Error: &body})
}

// rpcAsBadRequest turns a JSON-RPC-only error into a 400 for plain callers.
func rpcAsBadRequest(err error) error {
	var re *rpcError
	if errors.As(err, &re) {
		return wire.NewBadRequest(wire.KindPayload, "%s", re.message)
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, pending.ErrNotFound) }

// ownedBy reports whether the calling agent may see q: its own questions
// only, when agents have tokens; anyone's when they do not.
func ownedBy(r *http.Request, owner string) bool {
	c := middleware.CallerFrom(r.Context())
	return c.Role != middleware.RoleAgent || c.Agent == owner
}
