package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// bigQuestions creates n pending questions whose question.asked frames are
// nearly a megabyte each, enough to fill the socket buffers of a client
// that does not read.
func bigQuestions(t *testing.T, p *daemonProcess, n int) {
	t.Helper()
	message := strings.Repeat("x", 900<<10)
	for range n {
		body := fmt.Sprintf(`{"message":%q,"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`, message)
		if status, err := p.call(http.MethodPost, "/elicitations", body, nil); err != nil || status != http.StatusCreated {
			t.Fatalf("creating a big question: %d %v", status, err)
		}
	}
}

// stalledClient sends request on a connection with a tiny receive buffer
// and never reads the answer, so the server's writes to it block.
func stalledClient(t *testing.T, p *daemonProcess, path string) {
	t.Helper()
	addr := strings.TrimPrefix(p.base, "http://")
	dialer := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
}

// operatorStream reads GET /event until it ends; every event goes to the
// channel, which is closed when the stream ends.
func operatorStream(t *testing.T, p *daemonProcess) <-chan testkit.Event {
	t.Helper()
	return testkit.OperatorEvents(t, p.base+"/event")
}

// TestShutdownWithAStalledStreamAnswersEveryone is the whole shutdown on the
// durable store: an event client that stopped reading must not eat the
// budget of the others. A waiting POST /elicit gets the documented 503
// naming its question, a waiting MCP tool call's question is withdrawn and
// operators see question.rejected for it, and the process exits 0 within
// --shutdown-timeout.
func TestShutdownWithAStalledStreamAnswersEveryone(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	const timeout = 5 * time.Second
	p := startProcess(t, "--data-dir", t.TempDir(), "--shutdown-timeout", timeout.String(), "--event-write-timeout", "1m")
	bigQuestions(t, p, 8)
	stalledClient(t, p, "/event")
	frames := operatorStream(t, p)

	agent := testkit.PostAsync(p.base+"/elicit", twoQuestions)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := mcptest.Connect(t, ctx, p.base+"/mcp?session=ses_alpha")
	toolDone := make(chan string, 1)
	go func() {
		res, err := mcptest.AskDeployNow(ctx, cs)
		switch {
		case err != nil:
			toolDone <- err.Error()
		case res.IsError:
			toolDone <- res.Content[0].(*mcp.TextContent).Text
		default:
			toolDone <- "succeeded across a shutdown"
		}
	}()

	var mcpID, elicitID string
	for mcpID == "" || elicitID == "" {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatal("the operator's stream ended before both questions were asked")
			}
			if f.Type == "question.asked" && len(f.Properties.Questions) > 0 {
				switch text := f.Properties.Questions[0].Question; {
				case strings.Contains(text, "Deploy now?"):
					mcpID = f.Properties.ID
				case strings.HasPrefix(text, "Diagnose"):
					elicitID = f.Properties.ID
				}
			}
		case <-ctx.Done():
			t.Fatal("the questions were never announced")
		}
	}

	start := time.Now()
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Output())
	}
	took := time.Since(start)
	if took >= timeout {
		t.Errorf("shutdown took %s, not within --shutdown-timeout %s", took, timeout)
	}
	t.Logf("stopped in %s", took)

	got := <-agent
	if id := got.Header.Get("X-Questiond-Request-Id"); got.Status != http.StatusServiceUnavailable || id != elicitID || !strings.Contains(got.Body, elicitID) {
		t.Errorf("the waiting agent got %d %q (X-Questiond-Request-Id %q), want a 503 naming %s", got.Status, got.Body, id, elicitID)
	}
	rejected := false
	for f := range frames {
		if f.Type == "question.rejected" && f.Properties.RequestID == mcpID {
			rejected = true
		}
	}
	if !rejected {
		t.Errorf("the operator's stream never saw question.rejected for the withdrawn MCP question %s", mcpID)
	}
	select {
	case why := <-toolDone:
		if !strings.Contains(why, mcpID) || !strings.Contains(why, "withdrawn") {
			t.Errorf("the MCP tool call ended with %q, want an error saying %s was withdrawn", why, mcpID)
		}
	case <-ctx.Done():
		t.Error("the MCP tool call never ended")
	}
	// The stalled stream is cut off by its own close grace (the broker's
	// warning) or, if that races the daemon's deadline for all streams, by
	// the daemon (its warning): either way it is logged, and not an error.
	logs := p.Output()
	if !strings.Contains(logs, "event subscriber cut off") && !strings.Contains(logs, "event streams cut off") {
		t.Errorf("no warning that the stalled stream was cut off:\n%s", logs)
	}
}

// TestSecondSignalExitsAtOnce: a shutdown held up by a client that does not
// read its answer ends at once, non-zero, on a second SIGTERM.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	p := startProcess(t, "--store", "memory", "--shutdown-timeout", "1m")
	bigQuestions(t, p, 8)
	stalledClient(t, p, "/question")
	// Any request after the stalled one proves it is being answered.
	if status, err := p.call(http.MethodGet, "/global/health", "", nil); err != nil || status != http.StatusOK {
		t.Fatalf("health: %d %v", status, err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, p, `"msg":"shutting down"`)
	start := time.Now()
	err := p.stop(t, syscall.SIGTERM)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the second signal took %s to stop the process", took)
	}
	if err == nil {
		t.Error("the process exited 0 after a second signal cut its shutdown short")
	}
	if !strings.Contains(p.Output(), "exiting at once") {
		t.Errorf("the second signal was not logged:\n%s", p.Output())
	}
}

// waitForLog waits until the daemon has logged text.
func waitForLog(t *testing.T, p *daemonProcess, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Output(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never logged %s:\n%s", text, p.Output())
		}
		time.Sleep(10 * time.Millisecond) // polling a real process's log; nothing to synchronise on
	}
}
