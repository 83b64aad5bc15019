package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/httprate"

	"github.com/questiond/questiond/internal/pending"
)

// Limits bound what one client, one agent, or everyone together can hold.
// Zero means no limit.
type Limits struct {
	MaxPending         int // pending questions in total (429 beyond)
	MaxPendingPerAgent int // pending questions of one agent token (429 beyond)
	MaxStreams         int // open event streams (503 beyond)
	MaxMCPSessions     int // live MCP sessions on /mcp (503 beyond)
	RequestsPerMinute  int // requests per client: an agent, the operator, or else an IP (429 + Retry-After)
}

// counter is the store's way of counting without copying; a store without
// it is not limited by count.
type counter interface {
	Count(ctx context.Context, f pending.Filter) (int, error)
}

// tooMany is a 429 with OpenCode's NamedError body.
func tooMany(message string) error {
	return &statusError{http.StatusTooManyRequests, "TooManyRequests", message}
}

// checkPending refuses a new question when the store already holds as many
// pending questions as allowed, counting questions being created right now
// so concurrent requests cannot overshoot the total.
func (s *Server) checkPending(ctx context.Context, owner string) error {
	lim := s.opts.Limits
	c, ok := s.store.(counter)
	if !ok || (lim.MaxPending <= 0 && (lim.MaxPendingPerAgent <= 0 || owner == "")) {
		return nil
	}
	if lim.MaxPending > 0 {
		n, err := c.Count(ctx, pending.Filter{})
		if err != nil {
			return err
		}
		if n+int(s.creating.Load())-1 >= lim.MaxPending {
			s.meter.Refused(LimitPending)
			return tooMany(fmt.Sprintf("questiond holds %d pending questions, its limit; try again once some are answered", lim.MaxPending))
		}
	}
	if lim.MaxPendingPerAgent > 0 && owner != "" {
		n, err := c.Count(ctx, pending.Filter{Owner: owner})
		if err != nil {
			return err
		}
		if n >= lim.MaxPendingPerAgent {
			s.meter.Refused(LimitPendingPerAgent)
			return tooMany(fmt.Sprintf("agent %q has %d pending questions, its limit; try again once some are answered", owner, n))
		}
	}
	return nil
}

// streamSlot takes one of the MaxStreams event-stream slots; release gives it back.
func (s *Server) streamSlot() (release func(), err error) {
	max := s.opts.Limits.MaxStreams
	if n := s.streams.Add(1); max > 0 && n > int64(max) {
		s.streams.Add(-1)
		s.meter.Refused(LimitStreams)
		return nil, &statusError{http.StatusServiceUnavailable, "ServiceUnavailable",
			fmt.Sprintf("questiond already serves %d event streams, its limit; try again later", max)}
	}
	return func() { s.streams.Add(-1) }, nil
}

// rateLimit limits requests per client and minute, keyed by the caller's
// credentials when they are valid (each agent, the operator) and by the
// remote address otherwise.
func (s *Server) rateLimit() func(http.Handler) http.Handler {
	n := s.opts.Limits.RequestsPerMinute
	if n <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	key := func(r *http.Request) (string, error) {
		if c, err := s.auth.identify(r); err == nil {
			switch c.role {
			case roleAgent:
				return "agent:" + c.agent, nil
			case roleOperator:
				return "operator", nil
			}
		}
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		return "ip:" + httprate.CanonicalizeIP(host), nil
	}
	limit := httprate.LimitBy(n, time.Minute, key, httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
		s.meter.Refused(LimitRate)
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", strconv.Itoa(60))
		}
		writeStatus(w, &statusError{http.StatusTooManyRequests, "TooManyRequests",
			fmt.Sprintf("more than %d requests in a minute from this client; slow down", n)})
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
