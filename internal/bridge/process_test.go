package bridge_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
	"github.com/questiond/questiond/internal/testserver"
)

const bridgeToken = "bridge-agent-token-0123456789"

// bridgeProcess starts `questiond bridge --name deployer -- <this test
// binary as the upstream>` as a host would, with questiond's address and
// an agent token in its environment, and connects a host to it.
func bridgeProcess(t *testing.T, server string) (*mcp.ClientSession, *exec.Cmd, *testkit.SyncBuffer) {
	t.Helper()
	testenv.Heavy(t, "builds questiond and runs `questiond bridge` as a process")
	cmd := exec.Command(testkit.Binary(t), "bridge", "--name", "deployer", "--", os.Args[0])
	cmd.Env = append(os.Environ(), "QUESTIOND_SERVER="+server, "QUESTIOND_TOKEN="+bridgeToken, upstreamEnv+"=1")
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to questiond bridge: %v; its stderr:\n%s", err, stderr)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("questiond bridge's stderr:\n%s", stderr)
		}
	})
	return cs, cmd, stderr
}

func credentialed(t *testing.T) *testserver.Server {
	return testkit.Serve(t, testserver.Config{
		Events:      sse.Options{Heartbeat: time.Hour},
		Logger:      zaptest.NewLogger(t),
		DatabaseURL: testkit.DatabaseURL(t),
		API:         daemon.APIOptions{Auth: daemon.APIAuth{AgentTokens: map[string]string{"bridge": bridgeToken}}},
	})
}

// The real command: the host sees the upstream's tools, an elicitation is
// answered by the operator in questiond (asked with the bridge's token, in
// a session of its own), and the upstream never sees questiond's
// variables.
func TestTheBridgeCommandRelaysAnUpstreamProcess(t *testing.T) {
	srv := credentialed(t)
	ops := testkit.Watch(t, srv.URL)
	cs, _, stderr := bridgeProcess(t, srv.URL)
	if name := cs.InitializeResult().ServerInfo.Name; name != "upstream-server" {
		t.Fatalf("the host sees server %q", name)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "env"})
	if err != nil || mcptest.ToolText(res) != "questiond variables: " {
		t.Fatalf("the upstream's environment: %q %v", mcptest.ToolText(res), err)
	}
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q := ops.Asked()
	if !strings.HasPrefix(q.SessionID, "ses_") {
		t.Fatalf("asked in session %q", q.SessionID)
	}
	ops.Reply(q, map[string][]string{"Target": {"Staging"}, "Replicas": {"2"}, "Confirm": {"No"}, "Note": {"careful"}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool: %v %+v; bridge stderr:\n%s", o.Err, o.Res, stderr)
	}
}

// The upstream crashing ends the bridge with status 1, saying so, and the
// question it asked is withdrawn.
func TestTheBridgeEndsWhenTheUpstreamCrashes(t *testing.T) {
	srv := credentialed(t)
	ops := testkit.Watch(t, srv.URL)
	cs, cmd, stderr := bridgeProcess(t, srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	asking := mcptest.CallAsync(t, ctx, cs, "deploy", nil)
	ops.Asked()
	crashed := mcptest.CallAsync(t, ctx, cs, "crash", nil)
	ops.Next("question.rejected")
	testkit.Eventually(t, 20*time.Second, "the bridge saying the server ended", func() bool { return strings.Contains(stderr.String(), "ended") })
	if !strings.Contains(stderr.String(), "the MCP server") || !strings.Contains(stderr.String(), "exit status 3") {
		t.Fatalf("the bridge's stderr does not say the server exited with status 3:\n%s", stderr)
	}
	cancel()
	<-asking
	<-crashed
	_ = cs.Close() // waits for the bridge's exit
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("the bridge exited with %v, want status 1", cmd.ProcessState)
	}
}
