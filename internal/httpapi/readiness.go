package httpapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
)

// Pinger says whether a store can serve now. pending.Store implements it,
// asking its journal (a bbolt file checks the file is still there; a
// networked store asks its server).
type Pinger interface {
	Ping(ctx context.Context) error
}

const readyPath = "/readyz"

// readyTimeout bounds one readiness check: a store that takes longer to
// answer is not ready, and a probe's own timeout (1 s on Kubernetes) may be
// shorter still.
const readyTimeout = 2 * time.Second

// readiness answers GET /readyz. It logs a change of readiness once, not
// every probe.
type readiness struct {
	store   Pinger // nil: always ready
	log     *zap.Logger
	failing atomic.Bool // the last check failed
}

func newReadiness(given Pinger, store ask.QuestionStore, log *zap.Logger) *readiness {
	if given == nil {
		given, _ = store.(Pinger)
	}
	return &readiness{store: given, log: log}
}

func (rd *readiness) check(ctx context.Context) error {
	if rd.store == nil {
		return nil
	}
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

// handleReady serves GET and HEAD /readyz to probes, which carry no
// credentials: 200 {"ready":true} when the question store answers, 503
// {"ready":false} when it does not or questiond is shutting down. The body
// says nothing more (the reason is in the log), so it answers anyone and
// ignores credentials.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ready := !s.questions.Draining() && s.ready.check(r.Context()) == nil
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, struct {
		Ready bool `json:"ready"`
	}{ready})
}

// exceptProbes lets readiness probes past limit (the rate limit): a probe
// must see questiond's state, not the rest of its address's traffic, and a
// check costs no more than a refusal would.
func exceptProbes(limit func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		limited := limit(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == readyPath {
				next.ServeHTTP(w, r)
				return
			}
			limited.ServeHTTP(w, r)
		})
	}
}
