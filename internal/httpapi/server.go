// Package httpapi serves questiond over HTTP: OpenCode's question API and
// event streams for operators, and MCP elicitation routes for agents.
//
// It owns no state of its own: questions live in a Store, events travel on a
// Bus, and schemas and answers are translated by package elicit. Build one with
// New and serve it with any http.Server:
//
//	bus, _ := sse.New(sse.Options{Logger: log})
//	events := httpapi.NewEvents(bus, log)
//	store := pending.New(pending.Options{OnEnd: events.Ended})
//	srv, _ := httpapi.New(store, events, httpapi.Options{Logger: log})
//	http.ListenAndServe("127.0.0.1:4097", srv)
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// Store is the part of the pending store the handlers use. Every method takes
// a context and may fail, so a networked store fits behind it unchanged.
type Store interface {
	Create(ctx context.Context, q *pending.Question) error
	Get(ctx context.Context, id string) (*pending.Question, error)
	List(ctx context.Context, f pending.Filter) ([]*pending.Question, error)
	Settle(ctx context.Context, id string, o pending.Outcome) (*pending.Question, error)
	Wait(ctx context.Context, id string) (*pending.Question, error)
	// FindKey returns owner's live question asked with Idempotency-Key key,
	// or an error wrapping pending.ErrNotFound, or a *pending.KeyGoneError
	// for a key whose question has been forgotten.
	FindKey(ctx context.Context, owner, key string) (*pending.Question, error)
}

// Defaults for Options.
const (
	DefaultTimeout      = time.Hour
	DefaultMaxTimeout   = 7 * 24 * time.Hour
	DefaultMaxWait      = 5 * time.Minute
	DefaultKeepAlive    = 20 * time.Second
	DefaultMaxBodyBytes = 1 << 20
	DefaultVersion      = "0.1.0"
	DefaultMCPIdle      = time.Hour
)

// Options configure a Server. Zero values mean the defaults.
type Options struct {
	Logger  *zap.Logger
	Version string // reported by GET /global/health
	// Elicit tunes schema parsing and question building.
	Elicit elicit.Options
	// DefaultTimeout ends a question that got no answer with cancel; a
	// request's own "timeout" overrides it, up to MaxTimeout.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// MaxWait caps the wait of one GET /elicitations/{id}?wait= long-poll.
	MaxWait time.Duration
	// KeepAlive is how often POST /elicit writes a whitespace byte while it
	// waits, so proxies and HTTP clients with idle timeouts keep the call open.
	KeepAlive time.Duration
	// ReconnectGrace is how long a keyed POST /elicit whose connection
	// dropped keeps its question pending for a retry with the same
	// Idempotency-Key, before withdrawing it. Default 1m.
	ReconnectGrace time.Duration
	// MaxBodyBytes limits request bodies (413 beyond).
	MaxBodyBytes int64
	// CORSOrigins are allowed in addition to OpenCode's own allowlist.
	CORSOrigins []string
	// OpenAPI is served by GET /doc.
	OpenAPI []byte
	// Auth says who may answer and who may ask.
	Auth Auth
	// Sessions keeps each session's question capability; nil means an
	// in-memory registry where every session may ask the operator.
	Sessions session.Store
	// MCPIdleTimeout closes an MCP session (/mcp) that got no request for
	// this long; a tool call in progress keeps it open. Default 1h.
	MCPIdleTimeout time.Duration
	// Limits bound pending questions, event streams and request rates.
	Limits Limits
	// ListenAddr is the address the server is reached at (host:port); with
	// AllowedHosts it decides which Host headers are served (421 otherwise).
	ListenAddr   string
	AllowedHosts []string
	// Meter hears of every request, MCP tool call and limit refusal, for
	// metrics; nil means nobody does.
	Meter Meter
	// Ready says whether the store can serve, for GET /readyz; nil means
	// the store's own Ping when it has one, and always ready otherwise.
	Ready Pinger
	// ConsoleFollow moves every attached OpenCode TUI to the next session
	// with a pending question after the operator answers the last one of a
	// session (tui.session.select).
	ConsoleFollow bool
}

// Server is the HTTP face of questiond. It is an http.Handler.
type Server struct {
	store    Store
	sessions session.Store
	events   *Events
	opts     Options
	log      *zap.Logger
	router   chi.Router
	auth     *authenticator
	authLog  *authFailures
	unknown  *unknownKeys // request keys questiond does not know, logged once each
	meter    Meter
	ready    *readiness
	inboxes  map[string]string // inbox session id → its agent (see inbox.go)
	lists    listCache         // GET /question bodies per directory scope (see listing.go)
	mcp      *mcpEndpoint
	console  *consoleView
	draining atomic.Bool
	creating atomic.Int64 // elicitations being created right now, for the pending limits
	streams  atomic.Int64 // open event streams
	// Doors a shutdown closes and waits at: elicitations being created (Drain
	// closes it), MCP tool calls, and endings (Release closes those).
	creates, toolCalls, endings *door
	claims                      keyClaims  // Idempotency-Keys being created
	graces                      graceWaits // keyed POST /elicit calls, for ReconnectGrace
	// lifetime ends on Release: requests still waiting for a question let go.
	lifetime context.Context
	release  context.CancelFunc

	// Test hooks, always nil in production (see export_test.go).
	onKeyClaimed func(key string)
	onGraceArmed func(id string)
}

// New returns a Server that keeps questions in store and announces them with events.
func New(store Store, events *Events, opts Options) (*Server, error) {
	if store == nil || events == nil {
		return nil, errors.New("httpapi: a store and an event announcer are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	if opts.DefaultTimeout > opts.MaxTimeout {
		return nil, errors.New("httpapi: the default timeout is longer than the maximum timeout")
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.ReconnectGrace <= 0 {
		opts.ReconnectGrace = DefaultReconnectGrace
	}
	if opts.MCPIdleTimeout <= 0 {
		opts.MCPIdleTimeout = DefaultMCPIdle
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	cors, err := newCORS(opts.CORSOrigins)
	if err != nil {
		return nil, err
	}
	auth, err := newAuthenticator(opts.Auth)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	sessions := opts.Sessions
	if sessions == nil {
		registry, err := session.Open(context.Background(), session.Options{})
		if err != nil {
			return nil, fmt.Errorf("httpapi: %w", err)
		}
		sessions = registry
	}
	s := &Server{store: store, sessions: sessions, events: events, opts: opts, log: opts.Logger.Named("http"), auth: auth,
		inboxes: inboxOwners(opts.Auth), creates: newDoor(), toolCalls: newDoor(), endings: newDoor()}
	s.authLog = newAuthFailures(s.log, authFailureWindow)
	s.unknown = newUnknownKeys(s.log)
	s.meter = opts.Meter
	if s.meter == nil {
		s.meter = noMeter{}
	}
	s.ready = newReadiness(opts.Ready, store, s.log)
	s.lifetime, s.release = context.WithCancel(context.Background())
	s.mcp = newMCPEndpoint(s)
	s.console = newConsoleView(s, events, opts.ConsoleFollow)
	events.console.Store(s.console)
	s.router = s.routes(newHostGuard(opts.ListenAddr, opts.AllowedHosts), cors)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// MCPSessions returns the number of live MCP sessions on /mcp, for metrics.
// It walks them: call it at scrape time, not per request.
func (s *Server) MCPSessions() int { return s.mcp.sessions() }

// Drain makes the server refuse new elicitations, new event streams and
// new MCP requests (503) from now on, so a shutdown can settle what is
// pending without new questions slipping in. Streams already open stay open
// until the bus closes. An elicitation already past the door goes on: see
// WaitForCreates.
func (s *Server) Drain() {
	s.draining.Store(true)
	s.creates.close()
}

// WaitForCreates calls Drain and returns once every elicitation that got in
// before it has been stored and announced (question.asked published) or has
// failed, or with ctx's error if ctx ends first. After it, the store holds
// every question the API will ever create, so a shutdown can end them all.
func (s *Server) WaitForCreates(ctx context.Context) error {
	s.Drain()
	if err := s.creates.closeAndWait(ctx); err != nil {
		return fmt.Errorf("waiting for questions being created: %w", err)
	}
	return nil
}

// Release lets go of every request still waiting for a question, for a
// shutdown: a long-poll answers with the question as it is (pending), and
// POST /elicit answers 503 naming the question, or drops the connection if
// it has already started its answer, so the agent collects the result with
// GET /elicitations/{id} once questiond is back (with the memory store, end
// the pending questions first, and they get their endings instead). It ends
// no question an agent can still collect. MCP tool calls (/mcp) waiting for
// an answer withdraw their questions instead, since nobody could collect
// those answers, and answer with an error naming the question; then every
// MCP session is closed. It calls Drain.
//
// Release returns once every MCP tool call has returned, having withdrawn
// its question, and every ending already under way (an operator's reply or
// reject, an agent's withdrawal) has been stored and reported to the store's
// OnEnd, so its event is published; or with ctx's error if ctx ends first.
// From then on the API refuses to end questions (503): an ending now could
// no longer be announced to operators. Endings the store makes on its own
// (timeouts) are not held back.
func (s *Server) Release(ctx context.Context) error {
	s.Drain()
	s.release()
	// Tool calls see the release and withdraw their questions. Their
	// sessions close once the calls' answers (an error naming the question)
	// have gone out, or after mcpAnswerGrace for a client that does not read.
	err := s.toolCalls.closeAndWait(ctx)
	answered, cancel := context.WithTimeout(ctx, mcpAnswerGrace)
	_ = s.mcp.posts.closeAndWait(answered)
	cancel()
	s.mcp.Close()
	if err != nil {
		return fmt.Errorf("waiting for MCP tool calls to withdraw their questions: %w", err)
	}
	if err := s.endings.closeAndWait(ctx); err != nil {
		return fmt.Errorf("waiting for question endings under way: %w", err)
	}
	s.console.close()
	s.authLog.flush()
	return nil
}

// mcpAnswerGrace bounds how long Release waits for the answers of MCP
// requests to go out before it closes their sessions.
const mcpAnswerGrace = time.Second

// settle ends a question through the endings door, which Release closes.
func (s *Server) settle(ctx context.Context, id string, o pending.Outcome) (*pending.Question, error) {
	if !s.endings.enter() {
		return nil, errShuttingDown
	}
	defer s.endings.leave()
	return s.store.Settle(ctx, id, o)
}

// untilReleased returns a context that also ends on Release.
func (s *Server) untilReleased(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(s.lifetime, cancel)
	return ctx, func() { stop(); cancel() }
}

// released reports whether Release has been called.
func (s *Server) released() bool { return s.lifetime.Err() != nil }
