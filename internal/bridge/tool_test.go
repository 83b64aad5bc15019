package bridge_test

import (
	"testing"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// askedDuring is the bridged tool call questiond recorded for question id.
func askedDuring(t *testing.T, base, id string) *client.MCPTool {
	t.Helper()
	e, err := testkit.Agent(t, base, "").Get(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("GET /elicitations/%s: %v", id, err)
	}
	return e.MCPTool
}

// Each question names the tool whose call waits, with the bridge's name as
// the server, when one call is in flight; with two, nothing in a 2025
// elicitation says which of them asks, so the second names none.
func TestAQuestionNamesTheToolCallInFlight(t *testing.T) {
	base, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{Name: "deployer"})
	server, received := upstreamServer()
	serve(t, server, upstreamEnd)
	cs := host(t, hostEnd, nil)

	first := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q1 := ops.Asked()
	if got := askedDuring(t, base, q1.ID); got == nil || *got != (client.MCPTool{Server: "deployer", Name: "deploy"}) {
		t.Fatalf("the only call in flight: mcpTool %+v, want deployer/deploy", got)
	}
	second := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q2 := ops.Asked()
	if got := askedDuring(t, base, q2.ID); got != nil {
		t.Fatalf("with two calls in flight: mcpTool %+v, want none", got)
	}
	for _, q := range []string{q1.ID, q2.ID} {
		ops.Reject(q, "cancel")
		<-received // the tool's answer has room for one
	}
	mcptest.AwaitCall(t, first)
	mcptest.AwaitCall(t, second)
}

// A 2026-07-28 upstream's input request belongs to the call it answered:
// its question names that call's tool.
func TestAnInputRequestNamesItsCallsTool(t *testing.T) {
	base, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{Name: "deployer"})
	server, _ := inputServer()
	serve(t, server, upstreamEnd)
	cs := host2026(t, hostEnd)
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q := ops.Asked()
	if got := askedDuring(t, base, q.ID); got == nil || *got != (client.MCPTool{Server: "deployer", Name: "deploy"}) {
		t.Fatalf("mcpTool %+v, want deployer/deploy", got)
	}
	ops.Reject(q.ID, "cancel")
	mcptest.AwaitCall(t, out)
}
