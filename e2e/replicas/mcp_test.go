package replicas

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/pgtest"
)

// MCP sessions live in the replica that opened them: another replica
// answers a request in that session with 404, which tells an MCP client to
// start a new session (the Streamable HTTP transport's rule), so a load
// balancer must route by Mcp-Session-Id.
func TestMCPSessionIsUnknownOnAnotherReplica(t *testing.T) {
	url := pgtest.Database(t)
	a, b := startReplica(t, "A", url), startReplica(t, "B", url)
	res := postMCP(t, a, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"test","version":"1"}}}`)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize on A: %d, session %q", res.StatusCode, session)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	res = postMCP(t, a, session, "", list)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("tools/list on A, in A's session: %d", res.StatusCode)
	}
	res = postMCP(t, b, session, "", list)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("tools/list on B, in A's session: %d %s; want 404 so the client starts a new session", res.StatusCode, body)
	}
}

// postMCP sends one JSON-RPC message to r's /mcp, in session (none: ""),
// with the agent token (none: "").
func postMCP(t *testing.T, r *replica, session, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
