// Package mcptest is the MCP test support the suites share: a session
// with questiond's /mcp and its ask_user_question tool, a tool that
// elicits, a tool call awaited in the background, the text of a tool
// result, and a round trip of an elicitation
// through the MCP Go SDK's own client and server. It depends on the SDK
// only, not on the daemon.
package mcptest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect opens an MCP session with the server at endpoint (questiond's
// /mcp, with its query) over the streamable HTTP transport; the session is
// closed when the test ends. It is a stateful session, protocol 2025-11-25:
// go-sdk's default protocol, 2026-07-28, has none.
func Connect(tb testing.TB, ctx context.Context, endpoint string) *mcp.ClientSession {
	tb.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "questiond-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		tb.Fatalf("MCP connect: %v", err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// AskDeployNow calls questiond's ask_user_question tool with one question,
// "Deploy now?", answered Yes or No.
func AskDeployNow(ctx context.Context, cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
		"questions": []any{map[string]any{"question": "Deploy now?", "options": []any{
			map[string]any{"label": "Yes"}, map[string]any{"label": "No"}}}},
	}})
}

// ElicitingTool adds to server a tool name that elicits message with
// schema from its caller, sends the caller's answer to the returned
// channel (buffered for one) and returns result.
func ElicitingTool(server *mcp.Server, name, message string, schema any, result *mcp.CallToolResult) <-chan *mcp.ElicitResult {
	received := make(chan *mcp.ElicitResult, 1)
	mcp.AddTool(server, &mcp.Tool{Name: name}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: schema})
		if err != nil {
			return nil, nil, err
		}
		received <- res
		return result, nil, nil
	})
	return received
}

// ToolText is the text content of res, joined.
func ToolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// RoundTrip hands content to a real MCP Go SDK client as its answer
// (accept) to a real server's elicitation of schema over in-memory
// transports, on protocol 2025-11-25, where the SDK client checks the
// schema before answering and client and server both validate accepted
// content against it. It returns what the server's tool received, or why
// the SDK refused.
func RoundTrip(ctx context.Context, schema any, content map[string]any) (*mcp.ElicitResult, error) {
	server := mcp.NewServer(&mcp.Implementation{Name: "tool-server", Version: "test"}, nil)
	received := ElicitingTool(server, "ask", "Please answer", schema, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}})
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	mc := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		},
	})
	cs, err := mc.Connect(ctx, clientEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})
	if err != nil {
		return nil, fmt.Errorf("the SDK refused: %w", err)
	}
	if res.IsError {
		return nil, fmt.Errorf("the SDK refused: %s", ToolText(res))
	}
	return <-received, nil
}

// CallOutcome is what a CallTool returned.
type CallOutcome struct {
	Res *mcp.CallToolResult
	Err error
}

// CallAsync calls tool with args in a goroutine and sends its outcome to
// the returned channel; the test waits for the call before it ends.
func CallAsync(tb testing.TB, ctx context.Context, cs *mcp.ClientSession, tool string, args any) <-chan CallOutcome {
	out := make(chan CallOutcome, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		out <- CallOutcome{res, err}
	}()
	tb.Cleanup(func() { <-done })
	return out
}

// AwaitCall waits up to 30 s for a CallAsync's outcome.
func AwaitCall(tb testing.TB, out <-chan CallOutcome) CallOutcome {
	tb.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(30 * time.Second):
		tb.Fatal("CallTool did not return within 30s")
		return CallOutcome{}
	}
}
