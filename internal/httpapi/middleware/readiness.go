package middleware

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi/wire"
)

// Pinger says whether a store can serve now. pending.Store implements it,
// asking its journal (a bbolt file checks the file is still there; a
// networked store asks its server).
type Pinger interface {
	Ping(ctx context.Context) error
}

// ReadyPath is the Readiness probes' route.
const ReadyPath = "/readyz"

// readyTimeout bounds one Readiness check: a store that takes longer to
// answer is not ready, and a probe's own timeout (1 s on Kubernetes) may be
// shorter still.
const readyTimeout = 2 * time.Second

// Readiness answers GET /readyz. It logs a change of Readiness once, not
// every probe.
type Readiness struct {
	store   Pinger // the question store, or what Options.Ready names
	log     *zap.Logger
	failing atomic.Bool // the last check failed
}

// NewReadiness checks given, or else store (every ask.QuestionStore can
// be pinged).
func NewReadiness(given Pinger, store ask.QuestionStore, log *zap.Logger) *Readiness {
	if given == nil {
		given = store
	}
	return &Readiness{store: given, log: log}
}

// Check pings the store, logging a change of readiness.
func (rd *Readiness) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err := rd.store.Ping(ctx)
	switch was := rd.failing.Swap(err != nil); {
	case err != nil && !was:
		rd.log.Warn("not ready: the question store does not answer", zap.Error(err))
	case err == nil && was:
		rd.log.Info("ready again: the question store answers")
	}
	return err
}

// Handler serves GET and HEAD /readyz to probes, which carry no
// credentials: 200 {"ready":true} when the question store answers, 503
// {"ready":false} when it does not or questiond is shutting down
// (draining). The body says nothing more (the reason is in the log), so it
// answers anyone and ignores credentials.
func (rd *Readiness) Handler(draining func() bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ready := !draining() && rd.Check(r.Context()) == nil
		status := http.StatusOK
		if !ready {
			status = http.StatusServiceUnavailable
		}
		w.Header().Set("Cache-Control", "no-store")
		wire.WriteJSON(w, status, struct {
			Ready bool `json:"ready"`
		}{ready})
	}
}

// Except lets the requests pass says pass by mw, straight to the handler:
// probes must see questiond's state, not the rest of their address's
// traffic (see httpapi's routes).
func Except(pass func(*http.Request) bool, mw func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		wrapped := mw(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if pass(r) {
				next.ServeHTTP(w, r)
				return
			}
			wrapped.ServeHTTP(w, r)
		})
	}
}
