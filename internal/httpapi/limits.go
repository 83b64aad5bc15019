package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/httprate"

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

// tooMany is a 429 with OpenCode's NamedError body.
func tooMany(message string) error {
	return &statusError{http.StatusTooManyRequests, "TooManyRequests", message}
}

// streamSlot takes one of the MaxStreams operator event-stream slots;
// release gives it back. Agents' MCP streams have their own (see
// mcpEndpoint.streamSlot), so they cannot take these.
func (s *Server) streamSlot() (release func(), err error) {
	max := s.opts.Limits.MaxStreams
	if n := s.streams.Add(1); max > 0 && n > int64(max) {
		s.streams.Add(-1)
		s.meter.Refused(LimitStreams)
		return nil, &statusError{http.StatusServiceUnavailable, "ServiceUnavailable",
			fmt.Sprintf("questiond already serves %d operator event streams, its limit (--max-streams); try again later", max)}
	}
	return func() { s.streams.Add(-1) }, nil
}

// quota counts what agents hold of one resource, in total and per agent.
// It does no locking: its owner holds a lock around every call.
type quota struct {
	held    int
	byAgent map[string]int // agents holding some; "" (no agent tokens) is never counted
}

// quotaFull says which cap a take would pass.
type quotaFull int

const (
	quotaFits quotaFull = iota
	quotaTotal
	quotaAgent
)

// fits reports whether agent may take one more with at most max in total
// and perAgent each (zero: no limit). The anonymous agent ("") has no cap
// of its own: it is every agent at once.
func (q *quota) fits(agent string, max, perAgent int) quotaFull {
	switch {
	case max > 0 && q.held >= max:
		return quotaTotal
	case perAgent > 0 && agent != "" && q.byAgent[agent] >= perAgent:
		return quotaAgent
	}
	return quotaFits
}

func (q *quota) take(agent string) {
	q.held++
	if agent != "" {
		if q.byAgent == nil {
			q.byAgent = make(map[string]int)
		}
		q.byAgent[agent]++
	}
}

func (q *quota) give(agent string) {
	q.held--
	if agent != "" {
		if q.byAgent[agent]--; q.byAgent[agent] <= 0 {
			delete(q.byAgent, agent)
		}
	}
}

// rateLimit limits requests per client and minute, keyed by rateKey.
func (s *Server) rateLimit() func(http.Handler) http.Handler {
	n := s.opts.Limits.RequestsPerMinute
	if n <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	key := func(r *http.Request) (string, error) { return s.rateKey(r), nil }
	limit := httprate.LimitBy(n, time.Minute, key, httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
		s.meter.Refused(LimitRate)
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", strconv.Itoa(60))
		}
		writeStatus(w, &statusError{http.StatusTooManyRequests, "TooManyRequests",
			fmt.Sprintf("more than %d requests in a minute from this client; slow down (--rate-limit)", n)})
	}))
	return func(next http.Handler) http.Handler {
		limited := limit(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == healthPath && credentialForm(r) == "none" {
				// A probe must see questiond's health, not the rest of its
				// address's traffic: a 429 would get a healthy container
				// restarted. Health costs no more than a refusal would.
				// With credentials it counts: else it would be a way to
				// guess passwords without a limit.
				next.ServeHTTP(w, r)
				return
			}
			limited.ServeHTTP(w, r)
		})
	}
}

// rateKey is the bucket r counts against. Each agent token and the
// operator, with valid credentials, have their own. Callers without (valid)
// credentials are told apart only by their address — every local caller is
// 127.0.0.1, everything behind a load balancer is its address — so there
// each kind of route has its own bucket: an agent flooding the agents'
// routes, or requests for no route, cannot starve the operators' page, TUI
// and streams at that address.
func (s *Server) rateKey(r *http.Request) string {
	if c, err := s.auth.identify(r); err == nil {
		switch c.role {
		case roleAgent:
			return "agent:" + c.agent
		case roleOperator:
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
		if isMCPStatusRequest(r) {
			return operatorRoutes
		}
		return agentRoutes
	}
	return otherRoutes
}
