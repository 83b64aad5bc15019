package httpapi_test

// POST /mcp answers bodies that are not JSON, not JSON-RPC, or name an
// unknown method with JSON-RPC errors (application/json), never plain text:
// -32700 with id null for malformed JSON, -32600 for what is not a valid
// request, -32601 for an unknown method; unknown notifications get 202.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

type rpcAnswer struct {
	status      int
	contentType string
	body        string
}

func postMCP(t *testing.T, url, sessionID, version, body string) rpcAnswer {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return rpcAnswer{res.StatusCode, res.Header.Get("Content-Type"), string(b)}
}

// wantRPCError checks a JSON-RPC error response: its status, id (as JSON)
// and code.
func wantRPCError(t *testing.T, what string, got rpcAnswer, status int, id string, code int) {
	t.Helper()
	var body struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if got.status != status || got.contentType != "application/json" || json.Unmarshal([]byte(got.body), &body) != nil ||
		body.JSONRPC != "2.0" || string(body.ID) != id || body.Error.Code != code || body.Error.Message == "" {
		t.Errorf("%s: %d %s %s, want %d application/json with a JSON-RPC error %d and id %s", what, got.status, got.contentType, got.body, status, code, id)
	}
}

func TestMCPRefusesWithJSONRPCErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	url := h.URL + "/mcp?session=ses_rpc"
	live := newRawMCP(t, h, "/mcp?session=ses_rpc").sessionID
	const version = "2025-06-18"
	for _, session := range []string{live, ""} {
		for _, c := range []struct {
			what, body, id string
			code           int
		}{
			{"malformed JSON", `{"jsonrpc":"2.0","id":4,"method":`, "null", -32700},
			{"an empty body", "", "null", -32700},
			{"only whitespace", " \n", "null", -32700},
			{"a JSON string", `"tools/list"`, "null", -32600},
			{"an empty batch", `[]`, "null", -32600},
			{"a batch with a non-message", `[{"jsonrpc":"2.0","id":1,"method":"ping"},7]`, "null", -32600},
			{"JSON-RPC 1.0", `{"jsonrpc":"1.0","id":5,"method":"tools/list"}`, "5", -32600},
			{"no jsonrpc member", `{"id":"a","method":"tools/list"}`, `"a"`, -32600},
		} {
			wantRPCError(t, c.what+" (session "+session+")", postMCP(t, url, session, version, c.body), http.StatusBadRequest, c.id, c.code)
		}
	}
	// What the SDK reads but refuses becomes JSON-RPC too.
	wantRPCError(t, "an unknown method", postMCP(t, url, live, version, `{"jsonrpc":"2.0","id":9,"method":"tools/frobnicate","params":{}}`),
		http.StatusOK, "9", -32601)
	wantRPCError(t, "an unknown method without a session", postMCP(t, url, "", version, `{"jsonrpc":"2.0","id":"x","method":"tools/frobnicate"}`),
		http.StatusOK, `"x"`, -32601)
	wantRPCError(t, "a call without an id", postMCP(t, url, live, version, `{"jsonrpc":"2.0","method":"tools/list"}`),
		http.StatusBadRequest, "null", -32600)
	wantRPCError(t, "a notification with an id", postMCP(t, url, live, version, `{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`),
		http.StatusBadRequest, "3", -32600)
	wantRPCError(t, "a batch under 2025-06-18", postMCP(t, url, live, version, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`),
		http.StatusBadRequest, "null", -32600)
	wantRPCError(t, "an unknown method in a 2025-03-26 batch", postMCP(t, url, live, "2025-03-26",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/frobnicate"}]`),
		http.StatusBadRequest, "null", -32601)

	// A notification of a method nobody knows gets no answer.
	if got := postMCP(t, url, live, version, `{"jsonrpc":"2.0","method":"notifications/frobnicated"}`); got.status != http.StatusAccepted || got.body != "" {
		t.Errorf("unknown notification: %d %s %q, want 202 with no body", got.status, got.contentType, got.body)
	}
	// The session lives on.
	if got := postMCP(t, url, live, version, `{"jsonrpc":"2.0","id":10,"method":"tools/list"}`); got.status != http.StatusOK || !strings.Contains(got.body, "ask_user_question") {
		t.Errorf("tools/list after the refusals: %d %s", got.status, got.body)
	}
	// An unknown session is still MCP's 404, whatever the body.
	if got := postMCP(t, url, "nope", version, `{"jsonrpc":"2.0","id":11,"method":"tools/frobnicate"}`); got.status != http.StatusNotFound {
		t.Errorf("unknown method on an unknown session: %d %s", got.status, got.body)
	}
}
