package middleware

import (
	"bufio"
	"net"
	"net/http"
)

// Bounded label values CountRequests reports.
const (
	RouteUnmatched = "unmatched" // a request no route matches
	MethodOther    = "other"     // a method questiond does not serve
)

// CountRequests tells count of every request once its handler returned: its
// method (MethodOther for one questiond does not serve), the route pattern
// routeOf names for it and the status it got. Mount it inside the router,
// so that the route is known by then.
func CountRequests(count func(method, route string, status int), routeOf func(*http.Request) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r)
			count(meteredMethod(r.Method), routeOf(r), sw.final())
		})
	}
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
