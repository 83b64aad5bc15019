package mcpelicit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/client/mcpelicit"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

func deploySchema(t *testing.T) json.RawMessage {
	t.Helper()
	schema, err := client.NewSchema().
		String("name", client.Title("Name"), client.MinLength(1)).
		Integer("replicas", client.Title("Replicas"), client.Min(1), client.Max(10), client.DefaultNumber(2), client.Optional()).
		ChooseManyTitled("owners", []client.Choice{{Value: "u1", Title: "Ada"}, {Value: "u2", Title: "Linus"}}, client.Title("Owners"), client.MinItems(1)).
		Bool("dryRun", client.Title("Dry run")).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// connect links an MCP client with opts to server over in-memory
// transports, on protocol version (or the SDK's latest for "").
func connect(t *testing.T, server *mcp.Server, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), serverEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	var sessionOpts *mcp.ClientSessionOptions
	if version != "" {
		sessionOpts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "test"}, opts).Connect(t.Context(), clientEnd, sessionOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

var done = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}

// Request style: the tool calls Session.Elicit (protocol 2025-11-25); the
// handler asks questiond in the session and directory of Options; the
// operator's answer reaches the tool through the SDK's validation, defaults
// applied.
func TestHandlerAnswersElicitRequests(t *testing.T) {
	base, c := startDaemon(t)
	ops := testkit.Watch(t, base)
	schema := deploySchema(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "test"}, nil)
	received := mcptest.ElicitingTool(server, "deploy", "Deploy what?", schema, done)
	cs := connect(t, server, &mcp.ClientOptions{
		ElicitationHandler: mcpelicit.Handler(c, mcpelicit.Options{SessionID: "ses_mcp_bridge", Directory: "/srv/app", Timeout: time.Minute}),
	}, "2025-11-25")
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)

	q := ops.Asked()
	if q.SessionID != "ses_mcp_bridge" || len(q.Questions) != 4 {
		t.Fatalf("the operator sees %+v", q)
	}
	if len(ops.Pending("/srv/app")) != 1 || len(ops.Pending("/elsewhere")) != 0 {
		t.Fatal("the question is not scoped to the directory of Options")
	}
	ops.Reply(q, map[string][]string{"Name": {"api"}, "Replicas": {}, "Owners": {"Ada"}, "Dry run": {"No"}})
	o := mcptest.AwaitCall(t, out)
	if o.Err != nil || o.Res.IsError {
		t.Fatalf("CallTool: %v %s", o.Err, mcptest.ToolText(o.Res))
	}
	got := <-received
	content, _ := json.Marshal(got.Content)
	if got.Action != "accept" || string(content) != `{"dryRun":false,"name":"api","owners":["u1"],"replicas":2}` {
		t.Fatalf("the tool received %s %s", got.Action, content)
	}
}

// Input-request style (protocol 2026-07-28, the SDK's default): the tool
// returns InputRequests, the SDK's client answers them through the handler
// and calls again with the operator's answers.
func TestHandlerAnswersInputRequests(t *testing.T) {
	base, c := startDaemon(t)
	ops := testkit.Watch(t, base)
	schema := deploySchema(t)
	received := make(chan mcp.InputResponseMap, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "test"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "deploy"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{
					"target": &mcp.ElicitParams{Message: "Deploy what?", RequestedSchema: schema},
				},
				RequestState: "round-1",
			}, nil, nil
		}
		if req.Params.RequestState != "round-1" {
			return nil, nil, errors.New("request state lost")
		}
		received <- req.Params.InputResponses
		return done, nil, nil
	})
	cs := connect(t, server, &mcp.ClientOptions{ElicitationHandler: mcpelicit.Handler(c, mcpelicit.Options{})}, "")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q := ops.Asked()
	ops.Reply(q, map[string][]string{"Name": {"web"}, "Replicas": {"5"}, "Owners": {"Linus", "Ada"}, "Dry run": {"Yes"}})
	o := mcptest.AwaitCall(t, out)
	if o.Err != nil || o.Res.IsError {
		t.Fatalf("CallTool: %v %s", o.Err, mcptest.ToolText(o.Res))
	}
	responses := <-received
	res, ok := responses["target"].(*mcp.ElicitResult)
	if !ok {
		t.Fatalf("input responses %#v", responses)
	}
	content, _ := json.Marshal(res.Content)
	if res.Action != "accept" || string(content) != `{"dryRun":true,"name":"web","owners":["u1","u2"],"replicas":5}` {
		t.Fatalf("the tool received %s %s", res.Action, content)
	}
}

// The operator's decline and cancel reach the tool as such.
func TestHandlerPassesDeclineAndCancel(t *testing.T) {
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			base, c := startDaemon(t)
			ops := testkit.Watch(t, base)
			schema := deploySchema(t)
			server := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "test"}, nil)
			received := mcptest.ElicitingTool(server, "deploy", "Deploy what?", schema, done)
			cs := connect(t, server, &mcp.ClientOptions{ElicitationHandler: mcpelicit.Handler(c, mcpelicit.Options{})}, "2025-11-25")
			out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
			ops.Reject(ops.Asked().ID, action)
			if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError {
				t.Fatalf("CallTool: %v", o.Err)
			}
			if got := <-received; got.Action != action || got.Content != nil {
				t.Fatalf("the tool received %+v, want %s", got, action)
			}
		})
	}
}

// When the agent gives up on the call, the question is withdrawn.
func TestHandlerWithdrawsWhenTheCallIsCancelled(t *testing.T) {
	base, c := startDaemon(t)
	ops := testkit.Watch(t, base)
	schema := deploySchema(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "test"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "deploy"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Deploy?", RequestedSchema: schema}}}, nil, nil
		}
		return done, nil, nil
	})
	cs := connect(t, server, &mcp.ClientOptions{ElicitationHandler: mcpelicit.Handler(c, mcpelicit.Options{})}, "")
	ctx, cancel := context.WithCancel(t.Context())
	out := mcptest.CallAsync(t, ctx, cs, "deploy", nil)
	ops.Asked()
	cancel()
	if o := mcptest.AwaitCall(t, out); o.Err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	ops.Next("question.rejected")
	if n := len(ops.Pending("")); n != 0 {
		t.Fatalf("%d questions still pending", n)
	}
}

// URL mode is refused with -32602, and nothing is asked.
func TestHandlerRefusesURLMode(t *testing.T) {
	base, c := startDaemon(t)
	ops := testkit.Watch(t, base)
	handler := mcpelicit.Handler(c, mcpelicit.Options{})
	_, err := handler(t.Context(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{
		Mode: "url", Message: "Sign in", URL: "https://example.com/login", ElicitationID: "e1",
	}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "URL-mode") {
		t.Fatalf("URL mode gave %v, want -32602", err)
	}

	// Through the SDK: a client that advertises URL mode gets a server's
	// URL elicitation, and the server's Elicit returns the refusal.
	toolErr := make(chan error, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "signer", Version: "test"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "sign-in"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/login", ElicitationID: "e1"})
		toolErr <- err
		return done, nil, nil
	})
	cs := connect(t, server, &mcp.ClientOptions{
		ElicitationHandler: handler,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
	}, "2025-11-25")
	if o := mcptest.AwaitCall(t, mcptest.CallAsync(t, t.Context(), cs, "sign-in", nil)); o.Err != nil {
		t.Fatal(o.Err)
	}
	if err := <-toolErr; err == nil || !strings.Contains(err.Error(), "URL-mode elicitation is not supported") {
		t.Fatalf("the server's Elicit returned %v", err)
	}
	if n := len(ops.Pending("")); n != 0 {
		t.Fatalf("%d questions asked for URL mode", n)
	}
}

// A request questiond refuses comes back as -32602 with questiond's message.
func TestHandlerMapsRefusalsToInvalidParams(t *testing.T) {
	_, c := startDaemon(t)
	handler := mcpelicit.Handler(c, mcpelicit.Options{})
	_, err := handler(t.Context(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{
		Message:         "Where?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string", "format": "ipv4"}}},
	}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, `format "ipv4" is not allowed`) {
		t.Fatalf("a refused schema gave %v, want -32602 with questiond's message", err)
	}
	if _, err := handler(t.Context(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "No schema"}}); !errors.As(err, &rpcErr) {
		t.Fatalf("a form without a schema gave %v, want -32602", err)
	}
}
