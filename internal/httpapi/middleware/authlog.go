package middleware

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// AuthFailureWindow is how long the failures of one client stay summed up
// after the first is logged.
const AuthFailureWindow = time.Minute

// maxLoggedPathLength bounds a request path in the log.
const maxLoggedPathLength = 200

// maxAuthFailureClients bounds the clients one window remembers; failures
// of further clients are only counted.
const maxAuthFailureClients = 1024

// AuthFailures logs failed authentication (401) at warn, so an operator sees
// a mistyped password or a probing client, without letting a flood of them
// flood the log: in each window the first failure of a remote address on a
// kind of route is logged, the rest are counted and logged as one summary
// when the window ends. Nothing presented is logged, not even a wrong
// password: a mistyped password is often nearly the real one.
type AuthFailures struct {
	log    *zap.Logger
	window time.Duration

	mu       sync.Mutex
	clients  map[authFailureKey]int // failures not logged, per client, this window
	overflow int                    // failures of clients beyond maxAuthFailureClients
	timer    *time.Timer            // ends the window; nil while none is open
}

type authFailureKey struct{ remote, routes string }

// NewAuthFailures sums up failures over window (AuthFailureWindow in
// production) in log.
func NewAuthFailures(log *zap.Logger, window time.Duration) *AuthFailures {
	return &AuthFailures{log: log, window: window}
}

// SetWindow changes the window, for tests; call it before the first
// failure.
func (a *AuthFailures) SetWindow(window time.Duration) { a.window = window }

// Failed records a 401 on a route of the kind routes ("operator", "agent",
// "either").
func (a *AuthFailures) Failed(r *http.Request, routes string) {
	key := authFailureKey{remoteHost(r), routes}
	a.mu.Lock()
	if a.clients == nil {
		a.clients = map[authFailureKey]int{}
		a.timer = time.AfterFunc(a.window, a.Flush)
	}
	first := false
	if n, seen := a.clients[key]; seen {
		a.clients[key] = n + 1
	} else if len(a.clients) >= maxAuthFailureClients {
		a.overflow++
	} else {
		a.clients[key] = 0
		first = true
	}
	a.mu.Unlock()
	if !first {
		return
	}
	form, reason := CredentialForm(r), "wrong credentials"
	if form == "none" {
		reason = "no credentials"
	}
	a.log.Warn("authentication failed", zap.String("remote", key.remote), zap.String("routes", routes),
		zap.String("method", r.Method), zap.String("path", wire.Truncate(r.URL.Path, maxLoggedPathLength)), zap.String("reason", reason),
		zap.String("credentials", form))
}

// Flush ends the window: one line sums up the failures it did not log.
func (a *AuthFailures) Flush() {
	a.mu.Lock()
	clients, overflow := a.clients, a.overflow
	a.clients, a.overflow = nil, 0
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.mu.Unlock()
	suppressed, repeating := overflow, 0
	for _, n := range clients {
		suppressed += n
		if n > 0 {
			repeating++
		}
	}
	if suppressed == 0 {
		return
	}
	fields := []zap.Field{zap.Int("failures", suppressed), zap.Int("clients", repeating), zap.Duration("window", a.window)}
	if overflow > 0 {
		fields = append(fields, zap.Int("failuresOfUntrackedClients", overflow))
	}
	a.log.Warn("authentication failures not logged one by one", fields...)
}

// remoteHost is the address a request came from, without its port (which
// changes with every connection).
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// CredentialForm names the kind of credentials r carries, never their value.
func CredentialForm(r *http.Request) string {
	if header := r.Header.Get("Authorization"); header != "" {
		scheme, _, _ := strings.Cut(header, " ")
		switch strings.ToLower(scheme) {
		case "basic":
			return "basic"
		case "bearer":
			return "bearer"
		}
		return "other"
	}
	if r.URL.Query().Has("auth_token") {
		return "auth_token"
	}
	return "none"
}
