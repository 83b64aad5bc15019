package httpapi

import (
	"bufio"
	"net"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/questiond/questiond/internal/ask"
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
	RouteUnmatched = "unmatched"
	MethodOther    = "other"
)

// Names of the limits a Meter hears refusals of.
const (
	LimitRate                = "rate"                   // Limits.RequestsPerMinute (429)
	LimitPending             = ask.LimitPending         // Limits.MaxPending (429)
	LimitPendingPerAgent     = ask.LimitPendingPerAgent // Limits.MaxPendingPerAgent (429)
	LimitStreams             = "streams"                // Limits.MaxStreams, operator event streams (503)
	LimitMCPStreams          = "mcp_streams"            // Limits.MaxMCPStreams, agents' MCP event streams (503)
	LimitMCPStreamsPerAgent  = "mcp_streams_per_agent"  // Limits.MaxMCPStreamsPerAgent (429)
	LimitMCPSessions         = "mcp_sessions"           // Limits.MaxMCPSessions (503)
	LimitMCPSessionsPerAgent = "mcp_sessions_per_agent" // Limits.MaxMCPSessionsPerAgent (429)
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
// It runs inside the router, so that the route is known once the handler
// returns.
func (s *Server) meterRequests(next http.Handler) http.Handler {
	if _, off := s.meter.(noMeter); off {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		s.meter.Request(meteredMethod(r.Method), s.routeOf(r), sw.final())
	})
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

// meteredMethod keeps the method label to the methods questiond serves.
func meteredMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return m
	}
	return MethodOther
}

// statusWriter remembers the status a handler sent. It keeps what streaming
// needs: Flush for event streams and MCP, Hijack for event streams that take
// their connection over (their own head says 200), Unwrap for deadlines.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// final is the status the client got: 200 for a handler that wrote nothing
// (net/http sends that) or took the connection over for an event stream.
func (w *statusWriter) final() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
