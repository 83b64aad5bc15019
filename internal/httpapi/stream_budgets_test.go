package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// Agents' MCP streams, MCP sessions and requests draw on budgets of their
// own: one agent using up its own leaves the operators' streams and pages
// and the other agents working (issue 22, items 4 and 7).

// mcpBegin opens an MCP session with initialize (and initialized), with the
// header pairs given (credentials), and returns its Mcp-Session-Id.
func mcpBegin(t *testing.T, h *harness, headers ...string) string {
	t.Helper()
	res := mcpRaw(t, h, http.MethodPost, "/mcp", initializeBody, headers...)
	id := res.Header.Get("Mcp-Session-Id")
	if res.Status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", res.Status, res.Body)
	}
	res = mcpRaw(t, h, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		append([]string{"Mcp-Session-Id", id, "MCP-Protocol-Version", "2025-06-18"}, headers...)...)
	if res.Status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", res.Status, res.Body)
	}
	return id
}

// mcpListen opens the MCP session's event stream (GET /mcp) and returns the
// status it got; a stream that opened (200) stays open until the test ends.
// A refusal's body is returned too.
func mcpListen(t *testing.T, h *harness, session string, headers ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode == http.StatusOK {
		t.Cleanup(func() { cancel(); res.Body.Close() })
		return res.StatusCode, ""
	}
	defer cancel()
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// wantRefusal checks a refusal's status, name and that it names flag.
func wantRefusal(t *testing.T, what string, status int, body string, wantStatus int, flag string) {
	t.Helper()
	name := "ServiceUnavailable"
	if wantStatus == http.StatusTooManyRequests {
		name = "TooManyRequests"
	}
	if status != wantStatus || !strings.Contains(body, `"name":"`+name+`"`) || !strings.Contains(body, flag) {
		t.Fatalf("%s: %d %s, want %d %s naming %s", what, status, body, wantStatus, name, flag)
	}
}

// Without agent tokens, agents' MCP streams at --max-mcp-streams leave every
// operator stream slot free: /event and /global/event still open, and the
// next MCP stream is refused naming its flag.
func TestMCPStreamsDoNotTakeOperatorStreams(t *testing.T) {
	t.Parallel()
	meter := &meterLog{}
	h := newHarness(t, httpapi.Options{Meter: meter, Limits: httpapi.Limits{MaxStreams: 2, MaxMCPStreams: 2}})
	for i := 0; i < 2; i++ {
		if status, body := mcpListen(t, h, mcpBegin(t, h)); status != http.StatusOK {
			t.Fatalf("MCP stream %d: %d %s", i, status, body)
		}
	}
	status, body := mcpListen(t, h, mcpBegin(t, h))
	wantRefusal(t, "a third MCP stream", status, body, http.StatusServiceUnavailable, "--max-mcp-streams")

	h.openStream("/event").expect(t, "server.connected")
	h.openStream("/global/event").expect(t, "server.connected")
	res := h.do(http.MethodGet, "/event", nil)
	wantRefusal(t, "a third operator stream", res.Status, string(res.Body), http.StatusServiceUnavailable, "--max-streams")
	for _, line := range []string{"refused mcp_streams", "refused streams"} {
		if !meter.has(line) {
			t.Errorf("not metered: %q; heard:\n%s", line, meter.all())
		}
	}
}

// With agent tokens, an agent at its own MCP session and stream caps is
// refused (429, naming the flag and the agent), while another agent still
// begins sessions and opens streams and the operator's streams open; a
// session the agent closes makes room for its next one.
func TestOneAgentsMCPCapsLeaveOthersRoom(t *testing.T) {
	t.Parallel()
	meter := &meterLog{}
	h := newHarness(t, httpapi.Options{Auth: authBoth(), Meter: meter, Limits: httpapi.Limits{
		MaxStreams: 2, MaxMCPStreams: 10, MaxMCPStreamsPerAgent: 1, MaxMCPSessions: 10, MaxMCPSessionsPerAgent: 2,
	}})
	alpha := []string{"Authorization", bearerAuth(alphaToken)}
	beta := []string{"Authorization", bearerAuth(betaToken)}
	operator := []string{"Authorization", basicAuth("opencode", operatorPassword)}

	first, second := mcpBegin(t, h, alpha...), mcpBegin(t, h, alpha...)
	res := mcpRaw(t, h, http.MethodPost, "/mcp", initializeBody, alpha...)
	wantRefusal(t, "alpha's third MCP session", res.Status, string(res.Body), http.StatusTooManyRequests, "--max-mcp-sessions-per-agent")
	if !strings.Contains(string(res.Body), `agent \"alpha\"`) {
		t.Errorf("the refusal does not name the agent: %s", res.Body)
	}
	betaSession := mcpBegin(t, h, beta...)

	if status, body := mcpListen(t, h, first, alpha...); status != http.StatusOK {
		t.Fatalf("alpha's MCP stream: %d %s", status, body)
	}
	status, body := mcpListen(t, h, second, alpha...)
	wantRefusal(t, "alpha's second MCP stream", status, body, http.StatusTooManyRequests, "--max-mcp-streams-per-agent")
	if status, body := mcpListen(t, h, betaSession, beta...); status != http.StatusOK {
		t.Fatalf("beta's MCP stream while alpha is at its cap: %d %s", status, body)
	}
	h.openStream("/event", operator...).expect(t, "server.connected")
	h.openStream("/global/event", operator...).expect(t, "server.connected")

	if res := mcpRaw(t, h, http.MethodDelete, "/mcp", "", append([]string{"Mcp-Session-Id", second}, alpha...)...); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE alpha's session: %d %s", res.Status, res.Body)
	}
	mcpBegin(t, h, alpha...)
	for _, line := range []string{"refused mcp_sessions_per_agent", "refused mcp_streams_per_agent"} {
		if !meter.has(line) {
			t.Errorf("not metered: %q; heard:\n%s", line, meter.all())
		}
	}
}

// Concurrent initialize calls of one agent cannot overshoot its cap: the
// sessions being begun count.
func TestConcurrentMCPInitializesKeepTheAgentsCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authAgentsOnly(), Limits: httpapi.Limits{MaxMCPSessionsPerAgent: 3}})
	alpha := []string{"Accept", mcpAccept, "Authorization", bearerAuth(alphaToken)}
	var wg sync.WaitGroup
	statuses := make(chan int, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.request(http.MethodPost, "/mcp", initializeBody, alpha...)
			if err != nil {
				t.Error(err)
				return
			}
			statuses <- res.Status
		}()
	}
	wg.Wait()
	close(statuses)
	began := 0
	for status := range statuses {
		switch status {
		case http.StatusOK:
			began++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("initialize: %d", status)
		}
	}
	if began != 3 {
		t.Fatalf("%d sessions began, want the cap, 3", began)
	}
	mcpBegin(t, h, "Authorization", bearerAuth(betaToken))
}

// Without credentials every local caller is one address: an agent flooding
// the agents' routes to 429 leaves the operators' list, streams, page, page
// API and the TUI's console routes answering.
func TestRateLimitedAgentLeavesOperatorRoutesWithoutCredentials(t *testing.T) {
	t.Parallel()
	const perMinute = 20
	h := newHarness(t, httpapi.Options{Limits: httpapi.Limits{RequestsPerMinute: perMinute}})
	q := h.create(seedForm())
	limited := false
	for i := 0; i < perMinute+5 && !limited; i++ {
		res := h.do(http.MethodGet, "/elicitations/que_x", nil)
		limited = res.Status == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("the agent was never limited")
	}
	for _, path := range []string{"/question", "/ui", "/questiond/question/" + q.ID + "/form", "/session", "/config"} {
		if res := h.do(http.MethodGet, path, nil); res.Status != http.StatusOK {
			t.Errorf("GET %s while an agent is limited: %d %s", path, res.Status, res.Body)
		}
	}
	if res := h.do(http.MethodGet, "/mcp", nil); res.Status != http.StatusOK { // the TUI's MCP status
		t.Errorf("the TUI's GET /mcp while an agent is limited: %d %s", res.Status, res.Body)
	}
	h.openStream("/event").expect(t, "server.connected")
	h.openStream("/global/event").expect(t, "server.connected")
	res := h.do(http.MethodPost, "/elicitations", seedForm())
	wantRefusal(t, "an agent's create once limited", res.Status, string(res.Body), http.StatusTooManyRequests, "--rate-limit")
}

// With credentials, agent alpha over its rate leaves beta and the operator
// their own budgets.
func TestRateLimitedAgentLeavesOthersWithCredentials(t *testing.T) {
	t.Parallel()
	const perMinute = 20
	h := newHarness(t, httpapi.Options{Auth: authBoth(), Limits: httpapi.Limits{RequestsPerMinute: perMinute}})
	alpha := []string{"Authorization", bearerAuth(alphaToken)}
	limited := false
	for i := 0; i < perMinute+5 && !limited; i++ {
		limited = h.do(http.MethodGet, "/elicitations/que_x", nil, alpha...).Status == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("alpha was never limited")
	}
	if res := h.do(http.MethodPost, "/elicitations", seedForm(), "Authorization", bearerAuth(betaToken)); res.Status != http.StatusCreated {
		t.Errorf("beta while alpha is limited: %d %s", res.Status, res.Body)
	}
	operator := []string{"Authorization", basicAuth("opencode", operatorPassword)}
	for _, path := range []string{"/question", "/ui"} {
		if res := h.do(http.MethodGet, path, nil, operator...); res.Status != http.StatusOK {
			t.Errorf("the operator's GET %s while alpha is limited: %d %s", path, res.Status, res.Body)
		}
	}
	h.openStream("/global/event", operator...).expect(t, "server.connected")
}

// Every route counts against the rate budget of its role: without
// credentials a request to an operator route uses the address's operators'
// budget, never the agents', and the other way round.
func TestEveryRouteCountsInItsRolesRateBudget(t *testing.T) {
	t.Parallel()
	// status sends one request and returns its status once the head is in
	// (streams are not read, redirects not followed).
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(h *harness, method, path string) int {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, h.URL+path, nil)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, r := range routesFor(operatorRoute, agentRoute) {
		h := newHarness(t, httpapi.Options{Limits: httpapi.Limits{RequestsPerMinute: 1}})
		if got := status(h, r.method, r.on("que_x")); got == http.StatusTooManyRequests {
			t.Fatalf("%s: the first request of a minute got 429", r)
		}
		operator, agent := status(h, http.MethodGet, "/question"), status(h, http.MethodGet, "/elicitations/que_x")
		if limited := map[routeRole]int{operatorRoute: operator, agentRoute: agent}; limited[r.role] != http.StatusTooManyRequests {
			t.Errorf("%s did not use its role's budget: GET /question %d, GET /elicitations/que_x %d", r, operator, agent)
		}
		if other := map[routeRole]int{operatorRoute: agent, agentRoute: operator}; other[r.role] == http.StatusTooManyRequests {
			t.Errorf("%s used the other role's budget: GET /question %d, GET /elicitations/que_x %d", r, operator, agent)
		}
	}
}
