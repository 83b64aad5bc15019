package bridge_test

import (
	"context"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testkit"
)

// upstreamEnv makes the test binary the upstream MCP server of the process
// tests (over stdio) instead of running the tests. Its name does not start
// with QUESTIOND_, which the bridge keeps from its child.
const upstreamEnv = "BRIDGE_TEST_UPSTREAM"

// Leak sources this guards: the relay's two pumps and its questions' waits,
// MCP sessions over in-memory transports, the in-process questiond and its
// event streams.
func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) != "" {
		runUpstream()
		return
	}
	if os.Getenv(catRelayEnv) != "" {
		runCatRelay()
		return
	}
	testkit.Main(m)
}

// runUpstream serves upstreamServer's tools over stdio, plus "env" (the
// questiond variables it can see) and "crash" (it exits with status 3).
func runUpstream() {
	server, _ := upstreamServer()
	mcp.AddTool(server, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		seen := ""
		for _, kv := range os.Environ() {
			if len(kv) >= 10 && kv[:10] == "QUESTIOND_" {
				seen += kv + ";"
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "questiond variables: " + seen}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}
