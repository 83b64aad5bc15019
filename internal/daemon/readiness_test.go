package daemon_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/httpapi"
)

// probe sends what a Kubernetes probe sends: no credentials, or the given
// Authorization header.
func probe(t *testing.T, method, url, authorization string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// running serves a daemon built from cfg until the test ends.
func running(t *testing.T, cfg daemon.Config) *daemon.Daemon {
	t.Helper()
	d, err := daemon.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return d
}

// /readyz answers probes without credentials, even where both roles have
// them, outside the rate limit; it is ready while the question store's file
// is there, says nothing more when it is not, and logs the change once.
func TestReadinessFollowsTheStore(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	core, logs := observer.New(zapcore.InfoLevel)
	cfg.Logger = zap.New(core)
	cfg.API.Auth = httpapi.Auth{OperatorPassword: metricsPassword, AgentTokens: map[string]string{metricsAgent: metricsToken}}
	cfg.API.Limits.RequestsPerMinute = 2
	d := running(t, cfg)
	url := "http://" + d.Addr().String() + "/readyz"

	for i := range 4 { // twice the rate limit
		if status, body := probe(t, http.MethodGet, url, ""); status != http.StatusOK || body != `{"ready":true}` {
			t.Fatalf("probe %d: %d %s, want 200 {\"ready\":true}", i, status, body)
		}
	}
	if status, body := probe(t, http.MethodHead, url, ""); status != http.StatusOK || body != "" {
		t.Fatalf("HEAD: %d %q", status, body)
	}
	if status, _ := probe(t, http.MethodGet, url, "Basic d3Jvbmc6d3Jvbmc="); status != http.StatusOK {
		t.Fatalf("with credentials that admit nobody: %d, want 200 (readiness ignores credentials)", status)
	}
	limited := "http://" + d.Addr().String() + "/doc" // health without credentials is a probe too: not limited
	for range 3 {
		probe(t, http.MethodGet, limited, "")
	}
	if status, _ := probe(t, http.MethodGet, "http://"+d.Addr().String()+"/doc", ""); status != http.StatusTooManyRequests {
		t.Fatalf("the rate limit is not on (%d): the probes above proved nothing", status)
	}

	if err := os.Remove(cfg.BoltPath); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		status, body := probe(t, http.MethodGet, url, "")
		if status != http.StatusServiceUnavailable || body != `{"ready":false}` {
			t.Fatalf("store file gone: %d %s, want 503 {\"ready\":false}", status, body)
		}
	}
	if n := logs.FilterMessage("not ready: the question store does not answer").Len(); n != 1 {
		t.Errorf("%d 'not ready' log lines for three failed probes, want 1", n)
	}
}

// A memory store is ready until questiond begins to shut down; from then on
// a probe gets 503, so a load balancer stops sending new requests.
func TestReadinessEndsWithTheDrain(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	cfg.BoltPath = ""
	d := running(t, cfg)
	url := "http://" + d.Addr().String() + "/readyz"
	if status, body := probe(t, http.MethodGet, url, ""); status != http.StatusOK {
		t.Fatalf("memory store: %d %s", status, body)
	}
	d.Questions().Drain()
	if status, body := probe(t, http.MethodGet, url, ""); status != http.StatusServiceUnavailable || body != `{"ready":false}` {
		t.Fatalf("draining: %d %s, want 503", status, body)
	}
}
