package console

import (
	"net/http"
	"strings"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// The OpenCode TUI asks GET /mcp when it starts, meaning OpenCode's MCP
// status (which MCP servers OpenCode itself runs). On questiond /mcp is the
// agents' MCP endpoint, where that plain GET would be refused. A GET without
// Mcp-Session-Id that does not ask for an event stream cannot be an MCP
// client's stream, so an operator (or anyone, where operator routes need no
// credentials) gets OpenCode's answer for "no MCP servers": {}. Agents'
// requests, and every MCP stream request, go to the MCP endpoint unchanged.

// MCPStatusOr serves the operator's MCP status request (an operator's, as
// isOperator says) and passes every other /mcp request to mcp.
func MCPStatusOr(isOperator func(*http.Request) bool, mcp http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsMCPStatusRequest(r) && isOperator(r) {
			wire.WriteJSON(w, http.StatusOK, struct{}{})
			return
		}
		mcp.ServeHTTP(w, r)
	})
}

// IsMCPStatusRequest reports whether r is OpenCode's MCP status request
// rather than an MCP client's: a GET naming no MCP session and not
// accepting an event stream.
func IsMCPStatusRequest(r *http.Request) bool {
	if r.Method != http.MethodGet || r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	for _, accept := range r.Header.Values("Accept") {
		if strings.Contains(strings.ToLower(accept), "text/event-stream") {
			return false
		}
	}
	return true
}
