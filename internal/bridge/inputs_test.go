package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// inputServer is a 2026-07-28 upstream: its tool answers the first call
// with input requests and the retry, which must carry its requestState
// back, with done; the input it got goes to the returned channel.
func inputServer() (*mcp.Server, <-chan mcp.InputResponseMap) {
	received := make(chan mcp.InputResponseMap, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream-server", Version: "2026"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "deploy"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"plan": &mcp.ElicitParams{Message: "Deploy how?", RequestedSchema: deploySchema}},
				RequestState:  "opaque-round-1",
			}, nil, nil
		}
		if req.Params.RequestState != "opaque-round-1" {
			return nil, nil, errors.New("requestState lost: " + req.Params.RequestState)
		}
		received <- req.Params.InputResponses
		return done, nil, nil
	})
	return server, received
}

// host2026 connects a host on the SDK's latest protocol (2026-07-28) that
// declares no elicitation.
func host2026(t *testing.T, hostEnd mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).Connect(t.Context(), hostEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	return cs
}

// A 2026-07-28 upstream asks for input in its result: the relay asks the
// operator, sends the call again with the answers and the requestState as
// it came, and the host, which cannot elicit, gets the final result.
func TestInputRequestsAreAskedAndTheCallSentAgain(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
	server, received := inputServer()
	serve(t, server, upstreamEnd)
	cs := host2026(t, hostEnd)
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q := ops.Asked()
	ops.Reply(q, map[string][]string{"Target": {"Staging"}, "Replicas": {"4"}, "Confirm": {"Yes"}, "Note": {"go"}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	res, ok := (<-received)["plan"].(*mcp.ElicitResult)
	if !ok {
		t.Fatal("the retry carried no answer for the input request")
	}
	content, _ := json.Marshal(res.Content)
	if res.Action != "accept" || string(content) != `{"confirm":true,"note":"go","replicas":4,"target":"stg"}` {
		t.Fatalf("the upstream received %s %s", res.Action, content)
	}
}

// The host cancelling a call whose input is being asked withdraws the
// question.
func TestCancellingACallWaitingForInputWithdrawsIt(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
	server, _ := inputServer()
	serve(t, server, upstreamEnd)
	cs := host2026(t, hostEnd)
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
}
