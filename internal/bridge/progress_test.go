package bridge_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// A host gives a tool call a deadline that progress resets (OpenCode: 60 s),
// and a human takes longer: while the question waits, the host hears
// progress on the call's token, each value above the last, the upstream's
// own included.
func TestTheHostHearsProgressWhileTheOperatorThinks(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{ProgressInterval: 20 * time.Millisecond})
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream-server", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "deploy"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 7}); err != nil {
			return nil, nil, err
		}
		if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Deploy?", RequestedSchema: deploySchema}); err != nil {
			return nil, nil, err
		}
		return done, nil, nil
	})
	serve(t, server, upstreamEnd)
	var mu sync.Mutex
	var heard []float64
	cs := host(t, hostEnd, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		if req.Params.ProgressToken == "call-1" {
			mu.Lock()
			heard = append(heard, req.Params.Progress)
			mu.Unlock()
		}
	}})
	out := make(chan mcptest.CallOutcome, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "deploy"}
		params.SetProgressToken("call-1")
		res, err := cs.CallTool(t.Context(), params)
		out <- mcptest.CallOutcome{Res: res, Err: err}
	}()
	q := ops.Asked()
	testkit.Eventually(t, 10*time.Second, "three notifications of progress while the question waits", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heard) >= 4
	})
	ops.Reply(q, map[string][]string{"Target": {"Staging"}, "Replicas": {"1"}, "Confirm": {"Yes"}, "Note": {}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	mu.Lock()
	defer mu.Unlock()
	if heard[0] != 7 {
		t.Fatalf("the upstream's own progress did not come first: %v", heard)
	}
	for i := 1; i < len(heard); i++ {
		if heard[i] <= heard[i-1] {
			t.Fatalf("progress did not increase: %v", heard)
		}
	}
}
