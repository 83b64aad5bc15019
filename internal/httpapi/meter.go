package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi/mcpserver"
	"github.com/questiond/questiond/internal/httpapi/middleware"
)

// Meter hears what the API does, for metrics (package metrics implements it
// for Prometheus). Every argument comes from a small fixed set — methods,
// route patterns, status codes, results, limit names — never an id, a path
// or text, so a metric labelled with them stays bounded. Its methods run on
// request goroutines and must not block.
type Meter interface {
	// Request counts a request once its handler returned: its method
	// (MethodOther for one questiond does not serve), its chi route pattern
	// (RouteUnmatched when none matches) and the status it got.
	Request(method, route string, status int)
	// ToolCall counts an MCP question tool call that returned: the tool's
	// name and its result, "accept", "decline", "cancel" or "error".
	ToolCall(tool, result string)
	// Refused counts a request refused by one of the Limits, by its Limit*
	// name.
	Refused(limit string)
}

// Bounded label values a Meter gets.
const (
	RouteUnmatched = middleware.RouteUnmatched
	MethodOther    = middleware.MethodOther
)

// Names of the limits a Meter hears refusals of.
const (
	LimitRate                = "rate"                          // Limits.RequestsPerMinute (429)
	LimitPending             = ask.LimitPending                // Limits.MaxPending (429)
	LimitPendingPerAgent     = ask.LimitPendingPerAgent        // Limits.MaxPendingPerAgent (429)
	LimitStreams             = "streams"                       // Limits.MaxStreams, operator event streams (503)
	LimitMCPStreams          = mcpserver.LimitStreams          // Limits.MaxMCPStreams, agents' MCP event streams (503)
	LimitMCPStreamsPerAgent  = mcpserver.LimitStreamsPerAgent  // Limits.MaxMCPStreamsPerAgent (429)
	LimitMCPSessions         = mcpserver.LimitSessions         // Limits.MaxMCPSessions (503)
	LimitMCPSessionsPerAgent = mcpserver.LimitSessionsPerAgent // Limits.MaxMCPSessionsPerAgent (429)
)

// LimitNames are the names of every limit a Meter hears refusals of.
var LimitNames = []string{LimitRate, LimitPending, LimitPendingPerAgent,
	LimitStreams, LimitMCPStreams, LimitMCPStreamsPerAgent,
	LimitMCPSessions, LimitMCPSessionsPerAgent}

// noMeter is the Meter of a server given none.
type noMeter struct{}

func (noMeter) Request(string, string, int) {}
func (noMeter) ToolCall(string, string)     {}
func (noMeter) Refused(string)              {}

// meterRequests counts every request by method, route pattern and status.
func (s *Server) meterRequests(next http.Handler) http.Handler {
	if _, off := s.meter.(noMeter); off {
		return next
	}
	return middleware.CountRequests(s.meter.Request, s.routeOf)(next)
}

// routeOf is the pattern of the route r took, or would have taken had the
// host guard or the rate limit not refused it first: those refusals are
// counted under the route asked for. RouteUnmatched when none matches.
func (s *Server) routeOf(r *http.Request) string {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		if p := rctx.RoutePattern(); p != "" {
			return p
		}
	}
	rctx := chi.NewRouteContext()
	if s.router.Match(rctx, r.Method, r.URL.Path) {
		if p := rctx.RoutePattern(); p != "" {
			return p
		}
	}
	return RouteUnmatched
}
