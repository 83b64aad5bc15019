package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

var done = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}

// upstreamServer is an MCP server with a tool that elicits deploySchema
// ("deploy", its answers on the returned channel) and one that does not
// ("echo").
func upstreamServer() (*mcp.Server, <-chan *mcp.ElicitResult) {
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream-server", Version: "7.1"},
		&mcp.ServerOptions{Instructions: "Deploys things."})
	received := mcptest.ElicitingTool(server, "deploy", "Deploy **v2.3** now?", deploySchema, done)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	return server, received
}

// A host that cannot elicit (it declares no elicitation) calls a tool that
// elicits: the operator answers in questiond, questions in the upstream's
// property order, and the upstream gets the typed content in that order.
// Everything else passes as it is: the upstream's server info and
// instructions, its other tools.
func TestTheOperatorAnswersAnUpstreamsElicitation(t *testing.T) {
	base, ops, hostEnd, upstreamEnd, r := rigUp(t, bridge.Options{Name: "deployer", SessionID: "ses_bridge_test", Directory: "/srv/app"})
	server, received := upstreamServer()
	serve(t, server, upstreamEnd)
	cs := host(t, hostEnd, nil)

	init := cs.InitializeResult()
	if init.ServerInfo.Name != "upstream-server" || init.ServerInfo.Version != "7.1" || init.Instructions != "Deploys things." {
		t.Fatalf("the host was initialized with %+v, not the upstream's own", init)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || mcptest.ToolText(res) != "echo: hi" {
		t.Fatalf("a tool that does not elicit: %v %v", mcptest.ToolText(res), err)
	}

	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q := ops.Asked()
	var headers []string
	for _, info := range q.Questions {
		headers = append(headers, info.Header)
	}
	if q.SessionID != "ses_bridge_test" || strings.Join(headers, ",") != "Target,Replicas,Confirm,Note" {
		t.Fatalf("the operator sees session %s, questions %v; want ses_bridge_test, in the upstream's order", q.SessionID, headers)
	}
	if title := sessionTitle(t, base, q.SessionID); title != "[?] deployer via test-host" {
		t.Errorf("the session is titled %q, want the server's name via the host's", title)
	}
	ops.Reply(q, map[string][]string{"Target": {"Production"}, "Replicas": {"3"}, "Confirm": {"Yes"}, "Note": {}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	got := <-received
	content, _ := json.Marshal(got.Content)
	if got.Action != "accept" || string(content) != `{"confirm":true,"note":"none","replicas":3,"target":"prd"}` {
		t.Fatalf("the upstream received %s %s", got.Action, content)
	}
	var answer string
	for _, m := range r.toUpstream.messages() {
		if strings.Contains(m, `"action":"accept"`) {
			answer = m
		}
	}
	want := `"content":{"target":"prd","replicas":3,"confirm":true`
	if !strings.Contains(answer, want) {
		t.Fatalf("the ElicitResult on the wire: %s; want its content in the schema's order (%s)", answer, want)
	}
}

// The operator's decline and cancel reach the upstream as such.
func TestDeclineAndCancelReachTheUpstream(t *testing.T) {
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
			server, received := upstreamServer()
			serve(t, server, upstreamEnd)
			cs := host(t, hostEnd, nil)
			out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
			ops.Reject(ops.Asked().ID, action)
			if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError {
				t.Fatalf("CallTool: %v", o.Err)
			}
			if got := <-received; got.Action != action || got.Content != nil {
				t.Fatalf("the upstream received %+v, want %s", got, action)
			}
		})
	}
}

// The host cancelling its only call in flight withdraws the question the
// upstream asked for it: operators see it rejected.
func TestTheHostCancellingTheCallWithdrawsTheQuestion(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
	server, _ := upstreamServer()
	serve(t, server, upstreamEnd)
	cs := host(t, hostEnd, nil)
	ctx, cancel := context.WithCancel(t.Context())
	out := mcptest.CallAsync(t, ctx, cs, "deploy", nil)
	q := ops.Asked()
	cancel()
	if o := mcptest.AwaitCall(t, out); o.Err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	var ended struct{ RequestID string }
	if err := json.Unmarshal(ops.Next("question.rejected").Properties, &ended); err != nil || ended.RequestID != q.ID {
		t.Fatalf("rejected %+v, want %s", ended, q.ID)
	}
	if left := ops.Pending(""); len(left) != 0 {
		t.Fatalf("still pending after the call was cancelled: %+v", left)
	}
}

// The upstream ending ends the relay with ErrUpstreamEnded, and what it
// asked is withdrawn before Run returns.
func TestTheUpstreamEndingEndsTheRelayAndWithdraws(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, r := rigUp(t, bridge.Options{})
	server, _ := upstreamServer()
	cut := serve(t, server, upstreamEnd)
	cs := host(t, hostEnd, nil)
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	ops.Asked()
	cut()
	if err := r.ended(t); !errors.Is(err, bridge.ErrUpstreamEnded) {
		t.Fatalf("Run returned %v, want ErrUpstreamEnded", err)
	}
	if left := ops.Pending(""); len(left) != 0 {
		t.Fatalf("still pending when Run returned: %+v", left)
	}
	ops.Next("question.rejected")
	if o := mcptest.AwaitCall(t, out); o.Err == nil {
		t.Fatal("the call returned no error though its server ended")
	}
}

// A schema questiond does not serve gets a JSON-RPC error naming the
// problem, and nothing reaches the operators.
func TestAnInvalidSchemaIsRefusedAndNobodyIsAsked(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream-server", Version: "1"}, nil)
	errs := make(chan error, 1)
	mcp.AddTool(server, &mcp.Tool{Name: "nested"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Where?", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}}}`)})
		errs <- err
		return done, nil, nil
	})
	serve(t, server, upstreamEnd)
	cs := host(t, hostEnd, nil)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nested"}); err != nil {
		t.Fatal(err)
	}
	err := <-errs
	if err == nil || !strings.Contains(err.Error(), "questiond refused the elicitation") || !strings.Contains(err.Error(), "address") {
		t.Fatalf("the upstream's Elicit returned %v; want questiond's refusal naming the property", err)
	}
	if left := ops.Pending(""); len(left) != 0 {
		t.Fatalf("an invalid elicitation reached the operators: %+v", left)
	}
}

// With PreferHost, a host that declared elicitation answers it itself and
// questiond is not asked.
func TestPreferHostHandsElicitationsToAHostThatElicits(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{PreferHost: true})
	server, received := upstreamServer()
	serve(t, server, upstreamEnd)
	cs := host(t, hostEnd, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	if o := mcptest.AwaitCall(t, mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)); o.Err != nil {
		t.Fatal(o.Err)
	}
	if got := <-received; got.Action != "decline" {
		t.Fatalf("the upstream received %+v, want the host's decline", got)
	}
	if left := ops.Pending(""); len(left) != 0 {
		t.Fatalf("questiond was asked though the host answers: %+v", left)
	}
}

// sessionTitle is the title operators see for session id (GET /session/{id}).
func sessionTitle(t *testing.T, base, id string) string {
	t.Helper()
	res, err := http.Get(base + "/session/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var s struct{ Title string }
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s.Title
}

// The host going away ends the relay: the question is withdrawn and the
// upstream, which lives on until it is closed, is answered cancel, so that
// its handler ends (an HTTP server closes a session only once they have).
func TestTheHostLeavingCancelsTheUpstreamsElicitation(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, r := rigUp(t, bridge.Options{})
	server, _ := upstreamServer()
	serve(t, server, upstreamEnd)
	kept := &keptTransport{Transport: hostEnd}
	cs := host(t, kept, nil)
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	ops.Asked()
	_ = kept.conn.Close() // the host's process is gone
	if err := r.ended(t); err != nil {
		t.Fatalf("Run returned %v after the host left, want nil", err)
	}
	ops.Next("question.rejected")
	var answered bool
	for _, m := range r.toUpstream.messages() {
		answered = answered || strings.Contains(m, `"result":{"action":"cancel"}`)
	}
	if !answered {
		t.Fatalf("the upstream's elicitation was not answered cancel: %q", r.toUpstream.messages())
	}
	<-out
}
