package bridge_test

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// The real command with --url: `questiond bridge --url … --header
// Authorization=…` reaches an upstream over Streamable HTTP with the
// header on every request and the bridge's questiond token on none, the
// operator answers the upstream's elicitation, and the host closing the
// bridge ends the session (DELETE) and the bridge with status 0.
func TestTheBridgeCommandRelaysAnUpstreamOverHTTP(t *testing.T) {
	testenv.Heavy(t, "builds questiond and runs `questiond bridge --url` as a process")
	srv := credentialed(t)
	ops := testkit.Watch(t, srv.URL)
	server, received := upstreamServer()
	up := serveHTTP(t, server, nil, nil)
	cmd := exec.Command(testkit.Binary(t), "bridge", "--name", "deployer", "--url", up.URL+"/mcp", "--header", "Authorization="+upstreamKey)
	cmd.Env = append(cmd.Environ(), "QUESTIOND_SERVER="+srv.URL, "QUESTIOND_TOKEN="+bridgeToken)
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to questiond bridge: %v; its stderr:\n%s", err, stderr)
	}
	defer func() {
		if t.Failed() {
			t.Logf("questiond bridge's stderr:\n%s", stderr)
		}
	}()
	if name := cs.InitializeResult().ServerInfo.Name; name != "upstream-server" {
		t.Fatalf("the host sees server %q", name)
	}
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q := ops.Asked()
	ops.Reply(q, map[string][]string{"Target": {"Staging"}, "Replicas": {"2"}, "Confirm": {"No"}, "Note": {"careful"}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	if got := <-received; got.Action != "accept" || got.Content["target"] != "stg" {
		t.Fatalf("the upstream received %+v", got)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("closing the bridge: %v", err)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("the bridge exited with %v, want status 0", cmd.ProcessState)
	}
	seen := up.requests()
	for i, req := range seen {
		if req.header.Get("Authorization") != upstreamKey {
			t.Fatalf("request %d (%s) went without --header's Authorization", i, req.method)
		}
		for k, vs := range req.header {
			if strings.Contains(strings.Join(vs, " "), bridgeToken) {
				t.Fatalf("request %d (%s) carried questiond's token in %s", i, req.method, k)
			}
		}
	}
	if last := seen[len(seen)-1]; last.method != "DELETE" {
		t.Fatalf("the last request was %s, want the session's DELETE", last.method)
	}
}

// An upstream answering with an HTTP error ends the bridge with status 1
// and a message on stderr naming the URL, the status and the start of the
// body.
func TestTheBridgeCommandEndsOnAnHTTPError(t *testing.T) {
	testenv.Heavy(t, "builds questiond and runs `questiond bridge --url` as a process")
	srv := credentialed(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the MCP server is down for maintenance", http.StatusServiceUnavailable)
	}))
	defer up.Close()
	cmd := exec.Command(testkit.Binary(t), "bridge", "--url", up.URL+"/mcp")
	cmd.Env = append(cmd.Environ(), "QUESTIOND_SERVER="+srv.URL, "QUESTIOND_TOKEN="+bridgeToken)
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	_, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err == nil {
		t.Fatal("the host connected through a bridge whose server answers 503")
	}
	_ = cmd.Wait()
	msg := stderr.String()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(msg, up.URL+"/mcp") ||
		!strings.Contains(msg, "503 Service Unavailable") || !strings.Contains(msg, "down for maintenance") {
		t.Fatalf("the bridge exited with %v, saying:\n%s\nwant status 1 naming the URL, the status and the body", cmd.ProcessState, msg)
	}
}
