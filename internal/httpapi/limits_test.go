package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/sse"
)

func expectNamed(t *testing.T, res response, status int, name string) {
	t.Helper()
	var body struct {
		Name string
		Data struct{ Message string }
	}
	res.json(t, &body)
	if res.Status != status || body.Name != name || body.Data.Message == "" {
		t.Fatalf("got %d %s, want %d %s", res.Status, res.Body, status, name)
	}
}

func TestPendingLimitsTripAtTheirValue(t *testing.T) {
	t.Parallel()
	tokens := map[string]string{"alpha": "alpha-token-0123456789", "beta": "beta-token-0123456789"}
	h := newHarness(t, httpapi.Options{
		Auth:   httpapi.Auth{AgentTokens: tokens},
		Limits: httpapi.Limits{MaxPending: 3, MaxPendingPerAgent: 2},
	})
	as := func(agent string) []string { return []string{"Authorization", "Bearer " + tokens[agent]} }
	for i := 0; i < 2; i++ {
		if res := h.do(http.MethodPost, "/elicitations", seedForm(), as("alpha")...); res.Status != 201 {
			t.Fatalf("alpha's question %d: %d %s", i, res.Status, res.Body)
		}
	}
	res := h.do(http.MethodPost, "/elicitations", seedForm(), as("alpha")...)
	expectNamed(t, res, http.StatusTooManyRequests, "TooManyRequests")
	if !strings.Contains(string(res.Body), `agent \"alpha\"`) {
		t.Errorf("the per-agent 429 does not name the agent: %s", res.Body)
	}
	if res := h.do(http.MethodPost, "/elicitations", seedForm(), as("beta")...); res.Status != 201 {
		t.Fatalf("beta under its own limit: %d %s", res.Status, res.Body)
	}
	expectNamed(t, h.do(http.MethodPost, "/elicitations", seedForm(), as("beta")...), http.StatusTooManyRequests, "TooManyRequests")
	expectNamed(t, h.do(http.MethodPost, "/elicit", seedForm(), as("beta")...), http.StatusTooManyRequests, "TooManyRequests")
	var listed []any
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 3 {
		t.Fatalf("refused creates changed the store: %d pending, want 3", len(listed))
	}
}

func TestStreamLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Limits: httpapi.Limits{MaxStreams: 2}})
	a := h.openStream("/event")
	a.expect(t, "server.connected")
	b := h.openStream("/global/event")
	b.expect(t, "server.connected")
	expectNamed(t, h.do(http.MethodGet, "/events", nil), http.StatusServiceUnavailable, "ServiceUnavailable")
	a.cancel()
	for range a.frames {
	}
	// The server notices the hang-up on its own time; then the slot is free.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(h.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
		if res.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after a stream closed: %d", res.StatusCode)
		}
		time.Sleep(time.Millisecond)
	}
}

// The event broker refuses a directory beyond --max-directories; the
// answer is questiond's JSON error naming the flag, and a stream of a
// directory already watched, or of none, still opens.
func TestDirectoryLimit(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, tuning{events: sse.Options{MaxScopes: 1}}, zaptest.NewLogger(t))
	a := h.openStream("/event?directory=/a")
	a.expect(t, "server.connected")
	res := h.do(http.MethodGet, "/event?directory=/b", nil)
	expectNamed(t, res, http.StatusServiceUnavailable, "ServiceUnavailable")
	if !strings.Contains(string(res.Body), "--max-directories") {
		t.Fatalf("the refusal does not name --max-directories: %s", res.Body)
	}
	h.openStream("/event?directory=/a").expect(t, "server.connected")
	h.openStream("/global/event").expect(t, "server.connected")
}

func TestRateLimitPerClient(t *testing.T) {
	t.Parallel()
	tokens := map[string]string{"alpha": "alpha-token-0123456789", "beta": "beta-token-0123456789"}
	h := newHarness(t, httpapi.Options{Auth: httpapi.Auth{AgentTokens: tokens}, Limits: httpapi.Limits{RequestsPerMinute: 5}})
	alpha := []string{"Authorization", "Bearer " + tokens["alpha"]}
	for i := 0; i < 5; i++ {
		if res := h.do(http.MethodGet, "/elicitations/que_x", nil, alpha...); res.Status != http.StatusNotFound {
			t.Fatalf("request %d: %d %s", i, res.Status, res.Body)
		}
	}
	res := h.do(http.MethodGet, "/elicitations/que_x", nil, alpha...)
	expectNamed(t, res, http.StatusTooManyRequests, "TooManyRequests")
	if res.Header.Get("Retry-After") == "" {
		t.Fatalf("429 without Retry-After: %v", res.Header)
	}
	// Another agent has its own budget.
	if res := h.do(http.MethodGet, "/elicitations/que_x", nil, "Authorization", "Bearer "+tokens["beta"]); res.Status != http.StatusNotFound {
		t.Fatalf("beta was limited by alpha's requests: %d %s", res.Status, res.Body)
	}
}
