package main

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// SIGTERM while an MCP tool call waits for the operator: the daemon stops
// promptly (open MCP streams do not hold it), the call ends with an error,
// and the question is withdrawn rather than left pending in the durable
// store for an asker that can never collect it.
func TestShutdownEndsWaitingMCPToolCalls(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	dataDir := t.TempDir()
	first := startProcess(t, "--data-dir", dataDir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs := mcptest.Connect(t, ctx, first.base+"/mcp?session=ses_alpha")
	done := make(chan error, 1)
	go func() {
		res, err := mcptest.AskDeployNow(ctx, cs)
		if err == nil && !res.IsError {
			t.Errorf("the call succeeded across a shutdown: %+v", res)
		}
		if err == nil && res.IsError {
			t.Logf("tool error: %v", res.Content[0].(*mcp.TextContent).Text)
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var listed []struct{ ID string }
		if _, err := first.call(http.MethodGet, "/question", "", &listed); err == nil && len(listed) == 1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the tool call ended before it was listed: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool's question was never listed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := first.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, first.Output())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stopping took %s with an MCP call waiting", took)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool call did not end when questiond stopped")
	}

	second := startProcess(t, "--data-dir", dataDir)
	var listed []struct{ ID string }
	if _, err := second.call(http.MethodGet, "/question", "", &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 0 {
		t.Errorf("after restart %d questions are pending; the MCP question should have been withdrawn", len(listed))
	}
}
