package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/httpapi"
)

// newLoggedHarness is a harness whose log, debug included, the test reads;
// it checks no entry holds a secret. check runs once the server has shut
// down, with every entry it logged.
func newLoggedHarness(t *testing.T, opts httpapi.Options, check func(logs *observer.ObservedLogs)) (*harness, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	t.Cleanup(func() { // registered first, so it runs after the shutdown
		for _, leak := range leakedSecrets(logs.All(), secretsOf(opts.Auth)) {
			t.Errorf("a secret was logged: %s", leak)
		}
		if check != nil {
			check(logs)
		}
	})
	h := newHarnessWith(t, tuning{api: opts}, zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core)))
	return h, logs
}

// Failed authentication is logged at warn: the first failure of a client on
// each kind of route at once, with what it tried and why it failed, never
// what it presented; the rest of the window's failures in one summary, here
// when the server shuts down.
func TestFailedAuthenticationIsLoggedOncePerClientAndSummed(t *testing.T) {
	t.Parallel()
	h, _ := newLoggedHarness(t, httpapi.Options{Auth: authBoth()}, func(logs *observer.ObservedLogs) {
		first := logs.FilterMessage("authentication failed").All()
		if len(first) != 3 {
			t.Fatalf("%d \"authentication failed\" entries, want one per kind of route (3): %+v", len(first), first)
		}
		want := []map[string]string{
			{"routes": "operator", "method": "GET", "path": "/question", "reason": "wrong credentials", "credentials": "basic", "remote": "127.0.0.1"},
			{"routes": "agent", "method": "POST", "path": "/elicitations", "reason": "no credentials", "credentials": "none", "remote": "127.0.0.1"},
			{"routes": "either", "method": "GET", "path": "/doc", "reason": "wrong credentials", "credentials": "bearer", "remote": "127.0.0.1"},
		}
		for i, e := range first {
			if e.Level != zapcore.WarnLevel {
				t.Errorf("entry %d at %s, want warn", i, e.Level)
			}
			got := e.ContextMap()
			for k, v := range want[i] {
				if got[k] != v {
					t.Errorf("entry %d: %s = %v, want %s (all: %v)", i, k, got[k], v, got)
				}
			}
		}
		summary := logs.FilterMessage("authentication failures not logged one by one").All()
		if len(summary) != 1 || summary[0].Level != zapcore.WarnLevel {
			t.Fatalf("summaries: %+v, want one at warn", summary)
		}
		if got := summary[0].ContextMap(); got["failures"] != int64(6) || got["clients"] != int64(2) {
			t.Errorf("summary %v, want 6 failures of 2 clients (operator, agent routes of 127.0.0.1)", got)
		}
	})
	for range 3 {
		send(t, h, http.MethodGet, "/question", "", withAuth(basicAuth("opencode", wrongPassword)))
		send(t, h, http.MethodGet, "/question?auth_token="+b64("opencode:"+wrongPassword), "")
	}
	send(t, h, http.MethodPost, "/elicitations", `{}`)
	send(t, h, http.MethodPost, "/elicit", `{}`, withAuth(bearerAuth(unknownToken)))
	send(t, h, http.MethodGet, "/doc", "", withAuth(bearerAuth(unknownToken)))
	// Not failures: valid credentials, the other role's (403), and a probe.
	send(t, h, http.MethodGet, "/question", "", withAuth(basicAuth("opencode", operatorPassword)))
	send(t, h, http.MethodGet, "/question", "", withAuth(bearerAuth(alphaToken)))
	send(t, h, http.MethodGet, "/global/health", "")
}

// When a window ends, its summary is logged without waiting for more
// failures or a shutdown.
func TestFailedAuthenticationSummaryAtTheWindowsEnd(t *testing.T) {
	t.Parallel()
	h, logs := newLoggedHarness(t, httpapi.Options{Auth: authBoth()}, nil)
	httpapi.SetAuthFailureWindow(h.api, time.Second) // long enough for three requests on loopback
	for range 3 {
		if res := send(t, h, http.MethodGet, "/question", "", withAuth(basicAuth("opencode", wrongPassword))); res.Status != http.StatusUnauthorized {
			t.Fatalf("wrong password: %d, want 401", res.Status)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for logs.FilterMessage("authentication failures not logged one by one").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no summary 10s after a one-second window began")
		}
		time.Sleep(10 * time.Millisecond) // the window's timer fires on its own
	}
	summary := logs.FilterMessage("authentication failures not logged one by one").All()[0].ContextMap()
	if summary["failures"] != int64(2) || summary["window"] != time.Second {
		t.Errorf("summary %v, want 2 failures over 1s", summary)
	}
	// A new window logs the client's next failure again.
	send(t, h, http.MethodGet, "/question", "", withAuth(basicAuth("opencode", wrongPassword)))
	if n := logs.FilterMessage("authentication failed").Len(); n != 2 {
		t.Errorf("%d \"authentication failed\" entries after the window, want 2", n)
	}
}
