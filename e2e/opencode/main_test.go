package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testkit"
)

// upstreamFlag makes the test binary the upstream MCP server (over stdio)
// instead of running the tests: OpenCode, or the bridge OpenCode runs,
// starts it so.
const upstreamFlag = "-serve-deploy-upstream"

// Leak sources this guards: the in-process questiond and its event
// streams, the fake model's server, the HTTP clients' connections.
func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], upstreamFlag) {
		if err := upstreamServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		return
	}
	testkit.Main(m)
}

// releaseSchema is the form the upstream's tool asks for: a titled enum, a
// boolean, an integer with bounds and an optional string with a default,
// written out of alphabetical order.
const releaseSchema = `{"type":"object","properties":{` +
	`"target":{"type":"string","title":"Target","oneOf":[{"const":"stg","title":"Staging"},{"const":"prd","title":"Production"}]},` +
	`"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":5},` +
	`"confirm":{"type":"boolean","title":"Confirm"},` +
	`"note":{"type":"string","title":"Note","default":"none"}},` +
	`"required":["target","replicas","confirm"]}`

type releaseIn struct {
	Version string `json:"version" jsonschema:"the version to release"`
}

// upstreamServer is a small MCP server, "deploy-server", whose tool
// "release" asks its caller where and how to release (releaseSchema) and
// answers with text made of the typed answer; an elicitation that fails
// is the tool's error, saying why.
func upstreamServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "deploy-server", Version: "1.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "release", Description: "Release a version; asks the user where to."},
		func(ctx context.Context, req *mcp.CallToolRequest, in releaseIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Release " + in.Version + "?", RequestedSchema: json.RawMessage(releaseSchema)})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil, nil
			}
			if res.Action != "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not released: " + res.Action}}}, nil, nil
			}
			c := res.Content
			text := fmt.Sprintf("released %s: target=%v replicas=%v confirm=%v note=%v", in.Version, c["target"], c["replicas"], c["confirm"], c["note"])
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	return server
}
