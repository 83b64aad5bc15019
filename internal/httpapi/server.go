// Package httpapi serves questiond over HTTP: it wires every route and
// speaks the protocols that are not a package of their own — OpenCode's
// question API for operators (listing, replying, rejecting, a question's
// form), the agents' REST and JSON-RPC elicitation routes and session
// records, and the OpenCode encoding of questions asked and ended on the
// event streams (Events, an ask.Listener).
//
// It is an adapter: a question's life (creating, waiting, withdrawing,
// grace, limits, routing, endings, the shutdown doors) is package ask's,
// questions live in its store, events travel on a Bus, and schemas and
// answers are translated by package elicit. Its parts are packages of
// their own: middleware (what refuses a request before a route runs),
// console (the OpenCode TUI's console), mcpserver (/mcp) and wire (the
// writer and error mapper they all share).
//
// Locks: Events' mutex guards the questions the change log has announced
// and is never held while publishing or calling the console; the console
// takes its own lock before any other (see package console); listCache's
// and the MCP endpoint's are held alone.
//
// Build one with New over an ask.Service and serve it with any
// http.Server:
//
//	bus, _ := sse.New(sse.Options{Logger: log})
//	events := httpapi.NewEvents(bus, log)
//	announce := ask.NewAnnouncements(log, events)
//	store := pending.New(pending.Options{OnEnd: announce.Ended})
//	questions, _ := ask.New(store, nil, announce, ask.Options{Logger: log})
//	srv, _ := httpapi.New(questions, events, httpapi.Options{Logger: log})
//	http.ListenAndServe("127.0.0.1:4097", srv)
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi/console"
	"github.com/questiond/questiond/internal/httpapi/mcpserver"
	"github.com/questiond/questiond/internal/httpapi/middleware"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/overlay"
	"github.com/questiond/questiond/internal/session"
)

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

// Auth is who may use questiond (see middleware.Auth).
type Auth = middleware.Auth

// MinAgentTokenLength is the shortest agent token accepted.
const MinAgentTokenLength = middleware.MinAgentTokenLength

// Pinger says whether a store can serve now (see middleware.Pinger).
type Pinger = middleware.Pinger

// GuardHosts is the host guard for another listener of questiond's (the
// metrics listener); see middleware.HostGuard.
func GuardHosts(listenAddr string, allowed []string) func(http.Handler) http.Handler {
	return middleware.HostGuard(listenAddr, allowed)
}

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
	// Idempotency-Key, before withdrawing it. Default 1m. The service
	// applies it: see AskOptions.
	ReconnectGrace time.Duration
	// MaxBodyBytes limits request bodies (413 beyond).
	MaxBodyBytes int64
	// CORSOrigins are allowed in addition to OpenCode's own allowlist.
	CORSOrigins []string
	// OpenAPI is served by GET /doc.
	OpenAPI []byte
	// Auth says who may answer and who may ask.
	Auth Auth
	// Sessions keeps each session's question capability, for the service
	// (see AskOptions), which routes by it and serves it to the session
	// routes.
	Sessions session.Records
	// MCPIdleTimeout closes an MCP session (/mcp) that got no request for
	// this long; a tool call in progress keeps it open. Default 1h.
	MCPIdleTimeout time.Duration
	// Retention is how long the store keeps an ended question readable
	// (the daemon passes the store's): MCP tasks (/mcp, the tasks
	// extension) promise their results that long. Zero:
	// pending.DefaultRetention.
	Retention time.Duration
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
	// Upstream, when set, puts questiond in front of that
	// OpenCode server (--upstream): routes questiond does not own are
	// forwarded to it, and the operators' question list and event streams
	// carry both servers' questions. The console is off then: the server
	// answers the TUI.
	Upstream *overlay.Upstream
	// ConsoleFollow moves every attached OpenCode TUI to the next session
	// with a pending question after the operator answers the last one of a
	// session (tui.session.select).
	ConsoleFollow bool
}

// Server is the HTTP face of questiond. It is an http.Handler.
type Server struct {
	questions *ask.Service
	store     ask.QuestionStore // the service's, for reads
	sessions  session.Records
	events    *Events
	opts      Options
	log       *zap.Logger
	router    chi.Router
	auth      *middleware.Authenticator
	authLog   *middleware.AuthFailures
	guard     *middleware.Guard
	unknown   *unknownKeys // request keys questiond does not know, logged once each
	meter     Meter
	ready     *middleware.Readiness
	lists     listCache // GET /question bodies per directory scope (see listing.go)
	mcp       *mcpserver.Endpoint
	console   *console.Console
	upstream  *overlay.Upstream // Options.Upstream
	forward   http.Handler      // to upstream, for operators only
	forwardAs http.Handler      // to upstream, for a caller a guard admitted already
	streams   atomic.Int64      // open event streams
}

// AskOptions are the options of the ask.Service a Server with opts goes
// over: the parts of opts that belong to a question's life.
func AskOptions(opts Options) ask.Options {
	agents := make([]string, 0, len(opts.Auth.AgentTokens))
	for name := range opts.Auth.AgentTokens {
		agents = append(agents, name)
	}
	slices.Sort(agents)
	return ask.Options{
		Logger:             opts.Logger,
		Elicit:             opts.Elicit,
		ReconnectGrace:     opts.ReconnectGrace,
		MaxPending:         opts.Limits.MaxPending,
		MaxPendingPerAgent: opts.Limits.MaxPendingPerAgent,
		Agents:             agents,
		Hosted:             hosted(opts.Upstream),
	}
}

// New returns a Server that asks through questions (built with
// AskOptions(opts), its announcements told to events) and streams events.
// It registers its shutdown steps with questions: Release closes the MCP
// sessions and the consoles.
func New(questions *ask.Service, events *Events, opts Options) (*Server, error) {
	if questions == nil || events == nil {
		return nil, errors.New("httpapi: a question service and an event announcer are required")
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
	if opts.MCPIdleTimeout <= 0 {
		opts.MCPIdleTimeout = DefaultMCPIdle
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	cors, err := middleware.NewCORS(opts.CORSOrigins)
	if err != nil {
		return nil, err
	}
	auth, err := middleware.NewAuthenticator(opts.Auth)
	if err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	store := questions.Store()
	s := &Server{questions: questions, store: store, sessions: questions.Sessions(), events: events, opts: opts, log: opts.Logger.Named("http"), auth: auth}
	s.authLog = middleware.NewAuthFailures(s.log, middleware.AuthFailureWindow)
	s.guard = middleware.NewGuard(auth, s.authLog)
	s.unknown = newUnknownKeys(s.log)
	s.meter = opts.Meter
	if s.meter == nil {
		s.meter = noMeter{}
	}
	s.ready = middleware.NewReadiness(opts.Ready, store, s.log)
	s.mcp = mcpserver.New(mcpserver.Options{
		Questions: questions, Logger: s.log, Version: opts.Version, Elicit: opts.Elicit,
		DefaultTimeout: opts.DefaultTimeout, KeepAlive: opts.KeepAlive, IdleTimeout: opts.MCPIdleTimeout, Retention: opts.Retention,
		MaxBodyBytes: opts.MaxBodyBytes, BindToAgents: len(opts.Auth.AgentTokens) > 0, Meter: s.meter,
		Limits: mcpserver.Limits{
			MaxStreams: opts.Limits.MaxMCPStreams, MaxStreamsPerAgent: opts.Limits.MaxMCPStreamsPerAgent,
			MaxSessions: opts.Limits.MaxMCPSessions, MaxSessionsPerAgent: opts.Limits.MaxMCPSessionsPerAgent,
		},
	})
	s.console = console.New(console.Options{
		Questions: questions, Streams: consoleStreams{events}, Version: opts.Version, Follow: opts.ConsoleFollow, Logger: s.log,
	})
	if s.upstream = opts.Upstream; s.upstream != nil {
		s.forwardAs = s.upstream.Forwarder(s.upstreamFailed)
		s.forward = s.guard.OperatorsOnly(s.forwardAs)
		events.overlay.Store(true)
	} else {
		events.console.Store(s.console)
	}
	s.router = s.routes(middleware.HostGuard(opts.ListenAddr, opts.AllowedHosts), cors)
	// Tool calls see the release and withdraw their questions; then their
	// sessions close (see mcpserver.Endpoint.Release).
	questions.OnRelease(ask.AfterCalls, s.mcp.Release)
	questions.OnRelease(ask.AfterEndings, func(context.Context) {
		s.console.Close()
		s.authLog.Flush()
	})
	return s, nil
}

// Questions returns the service the server asks through: a shutdown drains
// and releases it (see ask.Service.Release).
func (s *Server) Questions() *ask.Service { return s.questions }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// MCPSessions returns the number of live MCP sessions on /mcp, for metrics.
// It walks them: call it at scrape time, not per request.
func (s *Server) MCPSessions() int { return s.mcp.Sessions() }

// writeError answers r with err, as package wire maps it.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	wire.WriteError(s.log, w, r, err)
}
