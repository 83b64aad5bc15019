package httpapi_test

// The OpenCode TUI's GET /mcp (OpenCode's MCP status) next to MCP clients'
// GET /mcp (their session's stream).

import (
	"net/http"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// wantNoMCPServers checks OpenCode's answer for "no MCP servers".
func wantNoMCPServers(t *testing.T, what string, res response) {
	t.Helper()
	if res.Status != http.StatusOK || string(res.Body) != "{}" || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s: %d %q %s, want 200 application/json {}", what, res.Status, res.Header.Get("Content-Type"), res.Body)
	}
}

func TestConsoleMCPStatusForOperators(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authBoth()})
	operator := basicAuth("opencode", operatorPassword)
	for _, accept := range []string{"", "application/json", "*/*"} {
		wantNoMCPServers(t, "the operator's GET /mcp, Accept "+accept, h.do(http.MethodGet, "/mcp", nil, "Authorization", operator, "Accept", accept))
	}
	// Wrong operator credentials are not an operator's: the agents' refusal, as before.
	res := h.do(http.MethodGet, "/mcp", nil, "Authorization", basicAuth("opencode", "wrong"), "Accept", "application/json")
	wantStatusError(t, "GET /mcp with a wrong password", res, http.StatusUnauthorized, "Unauthorized")
	res = h.do(http.MethodGet, "/mcp", nil, "Accept", "application/json")
	wantStatusError(t, "GET /mcp without credentials", res, http.StatusUnauthorized, "Unauthorized")
	// An agent's plain GET is an MCP request, refused by the transport as before.
	res = h.do(http.MethodGet, "/mcp", nil, "Authorization", bearerAuth(alphaToken), "Accept", "application/json")
	wantStatusError(t, "an agent's GET /mcp without an event-stream Accept", res, http.StatusBadRequest, "BadRequest")
	// A stream request stays an MCP request, also from an operator.
	res = h.do(http.MethodGet, "/mcp", nil, "Authorization", operator, "Accept", "text/event-stream", "Mcp-Session-Id", "mcp-unknown")
	wantStatusError(t, "the operator's GET /mcp for an MCP stream", res, http.StatusForbidden, "Forbidden")
	res = h.do(http.MethodGet, "/mcp", nil, "Authorization", operator, "Accept", "application/json, text/event-stream")
	wantStatusError(t, "the operator's GET /mcp accepting an event stream", res, http.StatusForbidden, "Forbidden")

	// MCP clients are served as before, their stream included.
	cs := mcpConnect(t, h, "/mcp?session=ses_tools", map[string]string{"Authorization": bearerAuth(alphaToken)}, nil)
	if got := toolNames(t, cs); len(got) != 1 || got[0] != "ask_user_question" {
		t.Errorf("tools %v", got)
	}
}

// Without operator credentials configured, the TUI sends none: its GET /mcp
// is answered as an operator's, whether or not agents have tokens.
func TestConsoleMCPStatusWithoutOperatorCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		auth       httpapi.Auth
		streamWant int // an anonymous stream request without a session: the MCP refusal
		streamName string
	}{
		{"open", httpapi.Auth{}, http.StatusBadRequest, "BadRequest"},
		{"agent tokens only", authAgentsOnly(), http.StatusUnauthorized, "Unauthorized"},
	} {
		h := newHarness(t, httpapi.Options{Auth: tc.auth})
		wantNoMCPServers(t, tc.name+": GET /mcp without credentials", h.do(http.MethodGet, "/mcp", nil, "Accept", "application/json"))
		res := h.do(http.MethodGet, "/mcp", nil, "Accept", "text/event-stream")
		wantStatusError(t, tc.name+": GET /mcp for a stream without a session", res, tc.streamWant, tc.streamName)
	}
}
