package opencodeserve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamFlag makes a test binary the upstream MCP server (over stdio)
// instead of running its tests: OpenCode, or the bridge OpenCode runs,
// starts it so. The argument after it, if any, names a file where the
// server writes the name its client gave in initialize.
const upstreamFlag = "-serve-deploy-upstream"

// ReleaseTool is the upstream's one tool; OpenCode names it
// "<config key>_release".
const ReleaseTool = "release"

// ReleaseSchema is the form the upstream's tool asks for: a titled enum, a
// boolean, an integer with bounds and an optional string with a default,
// written out of alphabetical order.
const ReleaseSchema = `{"type":"object","properties":{` +
	`"target":{"type":"string","title":"Target","oneOf":[{"const":"stg","title":"Staging"},{"const":"prd","title":"Production"}]},` +
	`"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":5},` +
	`"confirm":{"type":"boolean","title":"Confirm"},` +
	`"note":{"type":"string","title":"Note","default":"none"}},` +
	`"required":["target","replicas","confirm"]}`

// Upstream is the command that runs this test binary as the upstream MCP
// server; with clientFile, the server writes there the name its client
// (the host, through the bridge) gave in initialize.
func Upstream(clientFile ...string) []string {
	return append([]string{os.Args[0], upstreamFlag}, clientFile...)
}

// ServeUpstream runs the upstream MCP server over stdio and reports true
// when this process was started as one (by Upstream's command); it then
// exits when the server ends. A suite's TestMain calls it first.
func ServeUpstream() bool {
	at := slices.Index(os.Args, upstreamFlag)
	if at < 0 {
		return false
	}
	var clientFile string
	if at+1 < len(os.Args) {
		clientFile = os.Args[at+1]
	}
	if err := upstreamServer(clientFile).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// ContentPrefix leads the line of the tool's result that holds the
// content the upstream got, as JSON.
const ContentPrefix = "content: "

type releaseIn struct {
	Version string `json:"version" jsonschema:"the version to release"`
}

// upstreamServer is a small MCP server, "deploy-server", whose tool
// "release" asks its caller where and how to release (ReleaseSchema) and
// answers with text made of the typed answer: a line such as `released
// v2.3: target=prd replicas=3 confirm=true note=none`, then the content as
// the upstream got it, as JSON after "content: " (where "3" and 3, or
// "true" and true, differ). An elicitation that fails is the tool's error,
// saying why.
func upstreamServer(clientFile string) *mcp.Server {
	opts := &mcp.ServerOptions{}
	if clientFile != "" {
		opts.InitializedHandler = func(_ context.Context, req *mcp.InitializedRequest) {
			if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
				_ = os.WriteFile(clientFile, []byte(p.ClientInfo.Name), 0o644)
			}
		}
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "deploy-server", Version: "1.0"}, opts)
	mcp.AddTool(server, &mcp.Tool{Name: ReleaseTool, Description: "Release a version; asks the user where to."},
		func(ctx context.Context, req *mcp.CallToolRequest, in releaseIn) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Release " + in.Version + "?", RequestedSchema: json.RawMessage(ReleaseSchema)})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil, nil
			}
			if res.Action != "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not released: " + res.Action}}}, nil, nil
			}
			c := res.Content
			typed, _ := json.Marshal(c)
			text := fmt.Sprintf("released %s: target=%v replicas=%v confirm=%v note=%v\n%s%s", in.Version, c["target"], c["replicas"], c["confirm"], c["note"], ContentPrefix, typed)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	return server
}
