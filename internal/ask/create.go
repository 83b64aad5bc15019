package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// Request is one question to ask, checked already by the adapter that read
// it (its message is not empty, its timeout in bounds, its ids well formed)
// and naming its caller explicitly.
type Request struct {
	Owner     string // the agent that asks, "" for an anonymous one
	Client    string // the MCP client that asks, if one does (see pending.Question.Client)
	SessionID string // where to ask; "": the owner's inbox
	Directory string
	Title     string // the session's title for operators (see pending.Question.Title)
	Message   string
	Schema    json.RawMessage
	Tool      *pending.Tool
	MCPTool   *pending.MCPTool // the bridged MCP tool call that asked, if known
	Timeout   time.Duration
	// Key is the request's Idempotency-Key ("": none) and Fingerprint what
	// it asks, as its adapter fingerprints it: the same key with another
	// fingerprint is ErrKeyReused.
	Key, Fingerprint string
	// Form is Message and Schema parsed already; nil: Ask parses them.
	Form *elicit.Form
	// Only binds the caller to one capability (see session.RouteRecord);
	// "": whatever the session allows.
	Only session.Capability
	// Shown, when not nil, is what operators see instead of the questions
	// built from the schema: the same length, the same order.
	Shown []elicit.QuestionInfo
	// Check, when not nil, checks the request and fills in what it asks,
	// once it has passed the door a shutdown closes and before anything
	// else: a request is refused for the shutdown before it is refused for
	// what it holds, and a keyed retry gets its question back without it.
	Check func(r *Request) error
}

// Ask stores and announces the question r asks, and returns once it is
// stored and announced. A keyed request whose key already names one of the
// owner's questions gets that question, as it is now, with replayed set,
// provided it asks the same thing (ErrKeyReused otherwise); nothing is
// asked or announced again. A key whose question the store has forgotten,
// but still remembers, gets a KeyGoneError instead of a second question.
func (s *Service) Ask(ctx context.Context, r Request) (q *pending.Question, replayed bool, err error) {
	if r.Key == "" {
		q, err := s.create(ctx, r)
		return q, false, err
	}
	release, err := s.claims.take(claim{r.Owner, r.Key})
	if err != nil {
		return nil, false, err
	}
	defer release()
	if hook := s.onKeyClaimed; hook != nil {
		hook(r.Key)
	}
	first, err := s.store.FindKey(ctx, r.Owner, r.Key)
	var gone *pending.KeyGoneError
	switch {
	case errors.As(err, &gone) && gone.RequestHash != r.Fingerprint:
		return nil, false, ErrKeyReused
	case errors.As(err, &gone):
		return nil, false, &KeyGoneError{ID: gone.ID}
	case err == nil && first.RequestHash != r.Fingerprint:
		return nil, false, ErrKeyReused
	case err == nil:
		if ce := s.log.Check(zap.DebugLevel, "create replayed for its Idempotency-Key"); ce != nil {
			ce.Write(zap.String("id", first.ID), zap.Bool("ended", first.Ended != nil))
		}
		return first, true, nil
	case !errors.Is(err, pending.ErrNotFound):
		return nil, false, err
	}
	q, err = s.create(ctx, r)
	if errors.Is(err, pending.ErrExists) {
		err = ErrKeyInFlight // a rival outside this service holds the key
	}
	return q, false, err
}

// create is Ask without the key.
func (s *Service) create(ctx context.Context, r Request) (*pending.Question, error) {
	// Counted in before anything else, so a shutdown that closed the door
	// waits for this create (WaitForCreates) instead of missing it.
	if !s.creates.Enter() {
		return nil, ErrShuttingDown
	}
	defer s.creates.Leave()
	if r.Check != nil {
		if err := r.Check(&r); err != nil {
			return nil, err
		}
	}
	form := r.Form
	if form == nil {
		var err error
		if form, err = elicit.NewForm(r.Message, r.Schema, s.opts.Elicit); err != nil {
			return nil, err
		}
	}
	route, err := s.place(ctx, &r)
	if err != nil {
		return nil, err
	}
	questions := form.Questions
	if r.Shown != nil {
		if len(r.Shown) != len(questions) {
			return nil, fmt.Errorf("%d questions shown for %d properties", len(r.Shown), len(questions))
		}
		questions = r.Shown
	}
	s.creating.Add(1)
	defer s.creating.Add(-1)
	if err := s.checkPending(ctx, r.Owner); err != nil {
		return nil, err
	}
	id := ident.Ascending(ident.Question)
	if n := len(form.Schema.Properties); n > elicit.SoftPropertyLimit {
		s.log.Warn("elicitation has more properties than MCP's recommended limit",
			zap.String("id", id), zap.Int("properties", n), zap.Int("recommended", elicit.SoftPropertyLimit))
	}
	now := time.Now().Round(time.Millisecond) // milliseconds are enough for people and clients
	q := &pending.Question{
		ID:              id,
		SessionID:       route.ListedUnder,
		AskingSessionID: route.Asking,
		Directory:       r.Directory,
		Owner:           r.Owner,
		Client:          r.Client,
		Title:           r.Title,
		Message:         r.Message,
		Schema:          r.Schema,
		Questions:       questions,
		Tool:            r.Tool,
		MCPTool:         r.MCPTool,
		Hosted:          route.hosted,
		CreatedAt:       now,
		Deadline:        now.Add(r.Timeout),
		IdempotencyKey:  r.Key,
		RequestHash:     r.Fingerprint,
		Form:            form,
	}
	s.announce.begin(id)
	defer s.announce.finish(id)
	if err := s.store.Create(ctx, q); err != nil {
		return nil, err
	}
	// The question is stored: announce it even if the asking client has hung up meanwhile.
	s.announce.asked(q)
	if ce := s.log.Check(zap.InfoLevel, "question asked"); ce != nil {
		fields := []zap.Field{zap.String("id", id), zap.String("session", q.SessionID)}
		for _, f := range []struct{ key, value string }{{"askingSession", route.Asking}, {"agent", r.Owner}, {"client", q.Client}, {"directory", q.Directory}} {
			if f.value != "" { // no empty fields
				fields = append(fields, zap.String(f.key, f.value))
			}
		}
		ce.Write(append(fields, zap.Int("questions", len(form.Questions)), zap.Time("deadline", q.Deadline))...)
	}
	return q, nil
}

// checkPending refuses a new question when the store already holds as many
// pending questions as allowed, counting questions being created right now
// so concurrent requests cannot overshoot the total.
func (s *Service) checkPending(ctx context.Context, owner string) error {
	max, perAgent := s.opts.MaxPending, s.opts.MaxPendingPerAgent
	if max <= 0 && (perAgent <= 0 || owner == "") {
		return nil
	}
	if max > 0 {
		n, err := s.store.Count(ctx, pending.Filter{})
		if err != nil {
			return err
		}
		if n+int(s.creating.Load())-1 >= max {
			return s.refuse(LimitPending, fmt.Sprintf("questiond holds %d pending questions, its limit; try again once some are answered", max))
		}
	}
	if perAgent > 0 && owner != "" {
		n, err := s.store.Count(ctx, pending.Filter{Owner: owner})
		if err != nil {
			return err
		}
		if n >= perAgent {
			return s.refuse(LimitPendingPerAgent, fmt.Sprintf("agent %q has %d pending questions, its limit; try again once some are answered", owner, n))
		}
	}
	return nil
}

func (s *Service) refuse(limit, message string) error {
	if s.opts.OnRefused != nil {
		s.opts.OnRefused(limit)
	}
	return &LimitError{Limit: limit, Message: message}
}

// route decides where a question agent asks for sessionID goes (see
// session.RouteRecord). A question without a session goes to its agent's
// inbox, which has the default capability unless the agent configured it,
// and which no other agent may use.
func (s *Service) route(ctx context.Context, sessionID, agent string, only session.Capability) (session.Route, error) {
	if sessionID == "" {
		sessionID = Inbox(agent)
	}
	if err := s.OthersInbox(sessionID, agent); err != nil {
		return session.Route{}, err
	}
	// Like the store's Create, the lookup goes on when the asking client
	// hangs up meanwhile: a question that passed validation is asked, and
	// a caller that waits for it withdraws it if nobody waits (a cancelled
	// lookup would surface as a failure).
	ctx = context.WithoutCancel(ctx)
	// Asking claims the session for its agent before the question is
	// stored: once claimed, no other agent can configure it, and a session
	// another agent configured or asked in first is refused here.
	rec, err := s.sessions.Claim(ctx, sessionID, agent)
	if err != nil {
		return session.Route{}, &SessionError{ID: sessionID, Err: err}
	}
	route, err := session.RouteRecord(ctx, s.sessions, rec, only)
	var refused *session.RefusedError
	switch {
	case errors.As(err, &refused):
		return session.Route{}, &ForbiddenError{Message: refused.Reason}
	case err != nil:
		return session.Route{}, &SessionError{ID: sessionID, Err: err}
	case route.Asking != "":
		if _, inbox := s.inboxes[route.ListedUnder]; inbox {
			return session.Route{}, inboxParentError(route.ListedUnder)
		}
		// Asking through the parent uses it: it stays the agent's while
		// the question may be held there.
		if _, err := s.sessions.Claim(ctx, route.ListedUnder, agent); err != nil {
			return session.Route{}, &SessionError{ID: route.ListedUnder, Err: err}
		}
	}
	return route, nil
}

// SessionError is a session registry's error about session ID, met while
// routing a question; each protocol says it in its own terms.
type SessionError struct {
	ID  string
	Err error
}

func (e *SessionError) Error() string { return "session " + e.ID + ": " + e.Err.Error() }
func (e *SessionError) Unwrap() error { return e.Err }
