package httpapi_test

// Console titles say who asks: the agent's token name, else the name the MCP
// client gave itself.

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// askThroughMCP connects as client (with the bearer token, if any) to
// session and asks twoPrompts; the call waits until the test ends, which
// dismisses its question.
func askThroughMCP(t *testing.T, h *harness, client *mcp.Implementation, token, session string) {
	t.Helper()
	headers := map[string]string{}
	if token != "" {
		headers["Authorization"] = bearerAuth(token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	transport := &mcp.StreamableClientTransport{Endpoint: h.URL + "/mcp?session=" + session, HTTPClient: &http.Client{Transport: headerTransport(headers)}}
	cs, err := mcp.NewClient(client, nil).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a stateful session
	if err != nil {
		t.Fatalf("connecting as %s: %v", client.Name, err)
	}
	done := callAsync(context.Background(), cs, "ask_user_question", twoPrompts())
	t.Cleanup(func() {
		// Dismissed, the call returns and the MCP session closes at once.
		questions, _ := h.store.List(context.Background(), pending.Filter{SessionID: session})
		for _, q := range questions {
			_, _ = h.store.Settle(context.Background(), q.ID, pending.Outcome{Ending: pending.EndRejected, Result: pending.Result{Action: pending.ActionCancel}})
		}
		ended(t, done)
		_ = cs.Close()
	})
}

// titleOf waits for session to be listed and returns its title.
func titleOf(t *testing.T, h *harness, session string, headers ...string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		res := h.do(http.MethodGet, "/session/"+session, nil, headers...)
		if res.Status == http.StatusNotFound {
			continue
		}
		var info consoleSessionView
		res.json(t, &info)
		return info.Title
	}
	t.Fatalf("session %s was never listed", session)
	return ""
}

func TestConsoleTitleNamesTheMCPClient(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	askThroughMCP(t, h, &mcp.Implementation{Name: "claude-code", Title: "Claude Code", Version: "2"}, "", "ses_titled")
	askThroughMCP(t, h, &mcp.Implementation{Name: "  opencode\nsecond line\x07", Version: "1"}, "", "ses_named")
	askThroughMCP(t, h, &mcp.Implementation{Name: "", Version: "1"}, "", "ses_nameless")
	for session, want := range map[string]string{
		"ses_titled":   "[?] Claude Code: 2 questions: Which database?",
		"ses_named":    "[?] opencode: 2 questions: Which database?",
		"ses_nameless": "[?] 2 questions: Which database?",
	} {
		if got := titleOf(t, h, session); got != want {
			t.Errorf("%s: title %q, want %q", session, got, want)
		}
	}
}

func TestConsoleTitlePrefersTheAgentsTokenName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authBoth()})
	askThroughMCP(t, h, &mcp.Implementation{Name: "claude-code", Title: "Claude Code", Version: "2"}, alphaToken, "ses_agent")
	if got := titleOf(t, h, "ses_agent", "Authorization", basicAuth("opencode", operatorPassword)); got != "[?] alpha: 2 questions: Which database?" {
		t.Errorf("title %q, want the token name", got)
	}
}
