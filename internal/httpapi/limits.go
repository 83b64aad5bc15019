package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/go-chi/httprate"

	"github.com/questiond/questiond/internal/httpapi/console"
	"github.com/questiond/questiond/internal/httpapi/middleware"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/ui"
)

// Limits bound what one client, one agent, or everyone together can hold.
// Zero means no limit.
//
// Operators and agents draw on separate budgets, so that no agent can take
// what the operators need to see questions: MaxStreams counts the
// operators' event streams only, MaxMCPStreams the agents' MCP streams.
// The per-agent caps keep one agent token from taking a whole agents'
// budget; without agent tokens agents cannot be told apart, so only the
// totals apply to them (as with MaxPendingPerAgent).
type Limits struct {
	MaxPending             int // pending questions in total (429 beyond); the service applies it (see AskOptions)
	MaxPendingPerAgent     int // pending questions of one agent token (429 beyond); the service applies it
	MaxStreams             int // open operator event streams: /event, /global/event, the TUI's (503 beyond)
	MaxMCPStreams          int // open MCP event streams (GET /mcp) of all agents together (503 beyond)
	MaxMCPStreamsPerAgent  int // open MCP event streams of one agent token (429 beyond)
	MaxMCPSessions         int // live MCP sessions on /mcp (503 beyond)
	MaxMCPSessionsPerAgent int // live MCP sessions of one agent token (429 beyond)
	RequestsPerMinute      int // requests per client: an agent, the operator, or else an IP and route kind (429 + Retry-After)
}

// Defaults of the limits, for the command line.
const (
	DefaultMaxStreams             = 1000
	DefaultMaxMCPStreams          = 1000
	DefaultMaxMCPStreamsPerAgent  = 100
	DefaultMaxMCPSessions         = 1000
	DefaultMaxMCPSessionsPerAgent = 100
	DefaultRequestsPerMinute      = 6000
)

// streamSlot takes one of the MaxStreams operator event-stream slots;
// release gives it back. Agents' MCP streams have their own (see
// mcpserver.Endpoint), so they cannot take these.
func (s *Server) streamSlot() (release func(), err error) {
	max := s.opts.Limits.MaxStreams
	if n := s.streams.Add(1); max > 0 && n > int64(max) {
		s.streams.Add(-1)
		s.meter.Refused(LimitStreams)
		return nil, wire.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable",
			fmt.Sprintf("questiond already serves %d operator event streams, its limit (--max-streams); try again later", max))
	}
	return func() { s.streams.Add(-1) }, nil
}

// rateLimit limits requests per client and minute, keyed by rateKey.
func (s *Server) rateLimit() func(http.Handler) http.Handler {
	return middleware.RateLimit(s.opts.Limits.RequestsPerMinute, s.rateKey, func() { s.meter.Refused(LimitRate) })
}

// isProbe tells the requests the rate limit lets pass: readiness probes,
// and health probes without credentials. A probe must see questiond's
// state, not the rest of its address's traffic: a 429 would get a healthy
// container restarted, and a check costs no more than a refusal would. A
// health check with credentials counts: else it would be a way to guess
// passwords without a limit.
func isProbe(r *http.Request) bool {
	return r.URL.Path == middleware.ReadyPath || (r.URL.Path == healthPath && middleware.CredentialForm(r) == "none")
}

// rateKey is the bucket r counts against. Each agent token and the
// operator, with valid credentials, have their own. Callers without (valid)
// credentials are told apart only by their address — every local caller is
// 127.0.0.1, everything behind a load balancer is its address — so there
// each kind of route has its own bucket: an agent flooding the agents'
// routes, or requests for no route, cannot starve the operators' page, TUI
// and streams at that address.
func (s *Server) rateKey(r *http.Request) string {
	if c, err := s.auth.Identify(r); err == nil {
		switch c.Role {
		case middleware.RoleAgent:
			return "agent:" + c.Agent
		case middleware.RoleOperator:
			return "operator"
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return string(routeKindOf(r)) + "@" + httprate.CanonicalizeIP(host)
}

// routeKind is who a route is for, as far as the rate limit is concerned.
type routeKind string

const (
	operatorRoutes routeKind = "operator" // OpenCode's API, the event streams, the page, the TUI's console
	agentRoutes    routeKind = "agent"    // asking: /elicit, /elicitations, /sessions, MCP
	otherRoutes    routeKind = "other"    // the rest: /doc, probes with credentials, no route at all
)

// routeKindOf tells r's kind by its first path segment, the way routes
// wires them (the path chi routes by: the raw one when it has escapes).
// The OpenCode TUI's MCP status request on /mcp is an operator's.
func routeKindOf(r *http.Request) routeKind {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch first {
	case "", "question", "event", "events", "global", "questiond", strings.TrimPrefix(ui.Prefix, "/"),
		"config", "provider", "agent", "session":
		return operatorRoutes
	case "elicit", "elicitations", "sessions":
		return agentRoutes
	case "mcp":
		if console.IsMCPStatusRequest(r) {
			return operatorRoutes
		}
		return agentRoutes
	}
	return otherRoutes
}
