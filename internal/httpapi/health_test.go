package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// Health answers every probe (Docker, Kubernetes: no credentials, and
// Kubernetes names the pod's IP as Host) with 200, and tells the version
// only to callers who may use the routes of either role, as OpenCode's own
// body. Wrong credentials are still a 401.
func TestHealthAnswersProbes(t *testing.T) {
	t.Parallel()
	const full, anonymous = `{"healthy":true,"version":"9.9.9"}`, `{"healthy":true}`
	variants := []struct {
		name      string
		auth      httpapi.Auth
		anonymous string // what a caller without credentials gets
	}{
		{"no credentials configured", httpapi.Auth{}, full},
		{"operator and agents", authBoth(), anonymous},
		{"operator only", authOperatorOnly(), anonymous},
		{"agents only", authAgentsOnly(), anonymous},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			h := newObservedHarness(t, httpapi.Options{Version: "9.9.9", Auth: v.auth, ListenAddr: "0.0.0.0:4097"})
			for _, host := range []string{"", "127.0.0.1:4097", "10.1.2.3:4097", "[fd00::5]:4097"} {
				res := send(t, h, http.MethodGet, "/global/health", "", withHost(host))
				if res.Status != http.StatusOK || string(res.Body) != v.anonymous {
					t.Errorf("anonymous GET with Host %q: %d %s, want 200 %s", host, res.Status, res.Body, v.anonymous)
				}
				res = send(t, h, http.MethodHead, "/global/health", "", withHost(host))
				if res.Status != http.StatusOK || len(res.Body) != 0 || res.Header.Get("Content-Type") != "application/json" {
					t.Errorf("anonymous HEAD with Host %q: %d %q %v, want 200, no body", host, res.Status, res.Body, res.Header)
				}
			}
			var valid []string
			if v.auth.OperatorPassword != "" {
				valid = append(valid, basicAuth("opencode", operatorPassword))
				if res := send(t, h, http.MethodGet, "/global/health?auth_token="+b64("opencode:"+operatorPassword), ""); string(res.Body) != full {
					t.Errorf("with ?auth_token=: %d %s, want %s", res.Status, res.Body, full)
				}
			}
			if len(v.auth.AgentTokens) > 0 {
				valid = append(valid, bearerAuth(alphaToken))
			}
			for _, c := range valid {
				if res := send(t, h, http.MethodGet, "/global/health", "", withAuth(c)); res.Status != http.StatusOK || string(res.Body) != full {
					t.Errorf("with valid credentials: %d %s, want 200 %s", res.Status, res.Body, full)
				}
			}
			if v.auth.OperatorPassword != "" {
				res := send(t, h, http.MethodGet, "/global/health", "", withAuth(basicAuth("opencode", wrongPassword)))
				if res.Status != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Basic realm="Secure Area"` {
					t.Errorf("with a wrong password: %d %v, want OpenCode's 401", res.Status, res.Header)
				}
			}
			res := send(t, h, http.MethodPut, "/global/health", "{}")
			if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("PUT: %d, Allow %q, want 405 with GET, HEAD", res.Status, res.Header.Get("Allow"))
			}
		})
	}
}

// The rate limit counts no probe: a probe sees questiond's health, not how
// busy its address is, and probing eats nobody's allowance. Health asked
// with credentials counts, or it would let anyone guess passwords unlimited.
func TestHealthIsNotRateLimited(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authOperatorOnly(), Limits: httpapi.Limits{RequestsPerMinute: 3}})
	for i := range 10 {
		if res := h.do(http.MethodGet, "/global/health", nil); res.Status != http.StatusOK {
			t.Fatalf("probe %d: %d %s, want 200", i+1, res.Status, res.Body)
		}
	}
	for i, want := range []int{401, 401, 401, 429} {
		res := h.do(http.MethodGet, "/global/health", nil, "Authorization", basicAuth("opencode", wrongPassword))
		if res.Status != want {
			t.Fatalf("guess %d at the password on health: %d, want %d", i+1, res.Status, want)
		}
	}
	if res := h.do(http.MethodGet, "/global/health", nil); res.Status != http.StatusOK {
		t.Fatalf("a probe after the guesses were limited: %d, want 200", res.Status)
	}
}
