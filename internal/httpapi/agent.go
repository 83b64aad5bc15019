package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// create checks an elicitation, stores it and announces it. It returns once
// the question is stored and question.asked has been published.
func (s *Server) create(ctx context.Context, p *createParams) (*pending.Question, error) {
	return s.createAs(ctx, p, "", nil)
}

// createAs is create for a caller bound to one capability (only, when not
// empty; see routeQuestion), showing operators shown instead of the questions
// built from the schema when it is not nil (same length, same order).
func (s *Server) createAs(ctx context.Context, p *createParams, only session.Capability, shown []elicit.QuestionInfo) (*pending.Question, error) {
	// Counted in before anything else, so a shutdown that closed the door
	// waits for this create (WaitForCreates) instead of missing it.
	if !s.creates.enter() {
		return nil, errShuttingDown
	}
	defer s.creates.leave()
	v, err := s.validate(p)
	if err != nil {
		return nil, err
	}
	form := p.form
	if form == nil {
		if form, err = elicit.NewForm(v.message, v.schema, s.opts.Elicit); err != nil {
			return nil, err
		}
	}
	route, err := s.routeQuestion(ctx, v.sessionID, only)
	if err != nil {
		return nil, err
	}
	questions := form.Questions
	if shown != nil {
		if len(shown) != len(questions) {
			return nil, fmt.Errorf("%d questions shown for %d properties", len(shown), len(questions))
		}
		questions = shown
	}
	s.creating.Add(1)
	defer s.creating.Add(-1)
	owner := callerFrom(ctx).agent
	if err := s.checkPending(ctx, owner); err != nil {
		return nil, err
	}
	id := ident.Ascending(ident.Question)
	if n := len(form.Schema.Properties); n > elicit.SoftPropertyLimit {
		s.log.Warn("elicitation has more properties than MCP's recommended limit",
			zap.String("id", id), zap.Int("properties", n), zap.Int("recommended", elicit.SoftPropertyLimit))
	}
	sessionID := route.ListedUnder
	now := time.Now().Round(time.Millisecond) // milliseconds are enough for people and clients
	q := &pending.Question{
		ID:              id,
		SessionID:       sessionID,
		AskingSessionID: route.Asking,
		Directory:       v.directory,
		Owner:           owner,
		Client:          p.client,
		Message:         v.message,
		Schema:          v.schema,
		Questions:       questions,
		Tool:            v.tool,
		CreatedAt:       now,
		Deadline:        now.Add(v.timeout),
		IdempotencyKey:  p.key.key,
		RequestHash:     p.key.hash,
		Form:            form,
	}
	s.events.beginAnnounce(id)
	defer s.events.finishAnnounce(id)
	if err := s.store.Create(ctx, q); err != nil {
		return nil, err
	}
	// The question is stored: announce it even if the asking client has hung up meanwhile.
	s.events.asked(context.WithoutCancel(ctx), q)
	if ce := s.log.Check(zap.InfoLevel, "question asked"); ce != nil {
		fields := []zap.Field{zap.String("id", id), zap.String("session", sessionID)}
		for _, f := range []struct{ key, value string }{{"askingSession", route.Asking}, {"agent", owner}, {"client", q.Client}, {"directory", q.Directory}} {
			if f.value != "" { // no empty fields
				fields = append(fields, zap.String(f.key, f.value))
			}
		}
		ce.Write(append(fields, zap.Int("questions", len(form.Questions)), zap.Time("deadline", q.Deadline))...)
	}
	return q, nil
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
	s.unknown.note(params.unknown, routeElicitations, callerFrom(r.Context()).agent)
	params.key = newRequestKey(key, routeElicitations, params)
	q, replayed, err := s.createKeyed(r.Context(), params)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	w.Header().Set("Location", "/elicitations/"+q.ID)
	writeJSON(w, http.StatusCreated, toElicitation(q))
}

// elicitationID reads and checks the {id} path parameter.
func elicitationID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "id")
	if !strings.HasPrefix(id, ident.Question) {
		quoted, _ := json.Marshal(id)
		return "", newBadRequest(kindParams, "Expected a string starting with \"que\", got %s\n  at [\"id\"]", quoted)
	}
	return id, nil
}

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
		err = &notFound{id: id} // another agent's question is as good as unknown
	}
	if err != nil {
		s.writeError(w, r, s.notFoundAs(err, id))
		return
	}
	if q.Ended == nil && wait > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		ctx, cancel := s.untilReleased(r.Context())
		ctx, cancelWait := context.WithTimeout(ctx, wait)
		ended, err := s.store.Wait(ctx, id)
		cancelWait()
		cancel()
		switch {
		case err == nil:
			q = ended
		case r.Context().Err() == nil && (errors.Is(err, context.DeadlineExceeded) || s.released()):
			// The wait ran out, or questiond is stopping: answer with the
			// question as it still is; the agent asks again.
		case r.Context().Err() != nil:
			return // the agent gave up waiting; there is no one to answer
		default:
			s.writeError(w, r, s.notFoundAs(err, id))
			return
		}
	}
	writeJSON(w, http.StatusOK, toElicitation(q))
}

// parseWait reads the long-poll duration: a Go duration ("30s") or a number
// of seconds, clamped to MaxWait.
func (s *Server) parseWait(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		seconds, ferr := strconv.ParseFloat(text, 64)
		if ferr != nil {
			return 0, newBadRequest(kindQuery, "Expected a duration such as \"30s\", got %q\n  at [\"wait\"]", text)
		}
		d = time.Duration(seconds * float64(time.Second))
	}
	if d < 0 {
		return 0, newBadRequest(kindQuery, "wait must not be negative, got %q\n  at [\"wait\"]", text)
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
		s.writeError(w, r, &notFound{id: id}) // another agent's question is as good as unknown
		return
	}
	q, err := s.settle(r.Context(), id, pending.Outcome{
		Ending: pending.EndWithdrawn,
		Result: pending.Result{Action: pending.ActionCancel},
	})
	if err != nil {
		s.writeError(w, r, s.notFoundAs(err, id))
		return
	}
	writeJSON(w, http.StatusOK, toElicitation(q))
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
		s.unknown.note(params.unknown, routeElicit, callerFrom(r.Context()).agent)
		params.key = newRequestKey(key, routeElicit, params)
		q, replayed, err = s.createKeyed(r.Context(), params)
	}
	if err != nil {
		if isKeyError(err) {
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
	case s.released() && r.Context().Err() == nil:
		if committed {
			// The 200 is already on its way: cut the connection so the
			// client sees an incomplete answer rather than a wrong one.
			panic(http.ErrAbortHandler)
		}
		s.writeError(w, r, &statusError{http.StatusServiceUnavailable, "ServiceUnavailable",
			"questiond is shutting down; question " + q.ID + " stays pending in its durable store: once questiond is back, collect its result with GET /elicitations/" + q.ID})
		return
	default:
		// The caller is gone; nothing can be written any more.
		return
	}
	result := toElicitResult(ended.Ended.Result)
	var out any = result
	if rpc != nil && rpc.JSONRPC != "" {
		out = rpcResponse{JSONRPC: "2.0", ID: rpc.ID, Result: &result}
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
		s.attach(id)
		defer func() { s.detach(id, gone) }()
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := s.untilReleased(r.Context())
	defer cancel()
	done := s.waitInBackground(ctx, id)
	ticker := time.NewTicker(s.opts.KeepAlive)
	defer ticker.Stop()
	writeFailed := false
	for {
		select {
		case got := <-done:
			switch {
			case got.err == nil:
				return got.q, committed, nil
			case s.released() && r.Context().Err() == nil && !writeFailed:
				return nil, committed, got.err
			case r.Context().Err() == nil && !writeFailed:
				// The store failed while the caller is still here: end the
				// question so the caller gets a definite answer.
				s.log.Error("waiting for a question failed", zap.String("id", id), zap.Error(got.err))
				q, err := s.withdraw(id, pending.EndDisconnected)
				return q, committed, err
			}
			gone = true
			if !keyed && !s.draining.Load() {
				_, _ = s.withdraw(id, pending.EndDisconnected)
			}
			return nil, committed, got.err
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

// waited is how a wait for a question ended.
type waited struct {
	q   *pending.Question
	err error
}

// waitInBackground waits for question id to end while the caller keeps a
// connection alive; the channel gets exactly one value once ctx ends or the
// question does.
func (s *Server) waitInBackground(ctx context.Context, id string) <-chan waited {
	done := make(chan waited, 1)
	go func() {
		q, err := s.store.Wait(ctx, id)
		done <- waited{q, err}
	}()
	return done
}

// withdraw ends a question for an agent that can no longer wait for it. If it
// ended meanwhile, that ending stands and is returned.
func (s *Server) withdraw(id string, ending pending.Ending) (*pending.Question, error) {
	ctx := context.WithoutCancel(context.Background())
	q, err := s.settle(ctx, id, pending.Outcome{Ending: ending, Result: pending.Result{Action: pending.ActionCancel}})
	if err == nil {
		return q, nil
	}
	if q, gerr := s.store.Get(ctx, id); gerr == nil && q.Ended != nil {
		return q, nil
	}
	return nil, err
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

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *elicitResult   `json:"result,omitempty"`
	Error   *rpcErrorBody   `json:"error,omitempty"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// writeRPCError answers a JSON-RPC caller with a JSON-RPC error object:
// invalid params for anything the caller got wrong, internal error otherwise.
func (s *Server) writeRPCError(w http.ResponseWriter, r *http.Request, rpc *rpcRequest, err error) {
	var (
		re     *rpcError
		bad    *badRequest
		schema *elicit.SchemaError
		status *statusError
	)
	body := rpcErrorBody{Code: rpcInvalidParams, Message: err.Error()}
	switch {
	case errors.As(err, &re):
		body = rpcErrorBody{Code: re.code, Message: re.message}
	case errors.As(err, &bad), errors.As(err, &schema):
	case errors.As(err, &status) && status.status < 500:
		// Refused for who is asking (a session that may not ask, a limit):
		// the request is not acceptable as it stands.
		body = rpcErrorBody{Code: rpcInvalidRequest, Message: status.message}
	case errors.As(err, &status):
		body = rpcErrorBody{Code: rpcInternalError, Message: status.message}
	default:
		s.writeError(w, r, err)
		return
	}
	id := rpc.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id, Error: &body})
}

// rpcAsBadRequest turns a JSON-RPC-only error into a 400 for plain callers.
func rpcAsBadRequest(err error) error {
	var re *rpcError
	if errors.As(err, &re) {
		return newBadRequest(kindPayload, "%s", re.message)
	}
	return err
}

func isNotFound(err error) bool { return errors.Is(err, pending.ErrNotFound) }
