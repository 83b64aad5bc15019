package overlay

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

func partUpdated(part, session, tool, status string) []byte {
	return []byte(`{"type":"message.part.updated","properties":{"sessionID":"` + session + `","part":{"id":"` + part +
		`","messageID":"msg_1","sessionID":"` + session + `","type":"tool","tool":"` + tool + `","callID":"call_` + part +
		`","state":{"status":"` + status + `","input":{}}}}}`)
}

var deploy = &pending.MCPTool{Server: "my server.io", Name: "deploy"}

// OpenCode names an MCP tool "<server>_<tool>", each with every character
// but letters, digits, "_" and "-" made "_".
func TestOpenCodeToolID(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"github", "create_issue", "github_create_issue"},
		{"my server.io", "deploy", "my_server_io_deploy"},
		{"ünï", "a/b", "_n__a_b"},
		{"😀x", "t", "__x_t"},
	} {
		if got := openCodeToolID(c.server, c.tool); got != c.want {
			t.Errorf("openCodeToolID(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
}

// A call is found while it runs, and not once it ended; two calls of the
// same tool in flight are ambiguous; other tools do not count.
func TestCallsFindTheOneCallInFlight(t *testing.T) {
	c := newCalls()
	c.observe(partUpdated("prt_1", "ses_a", "my_server_io_deploy", "running"))
	c.observe(partUpdated("prt_2", "ses_b", "other_deploy", "running"))
	call, ok := c.find(context.Background(), deploy, 0)
	if !ok || call.SessionID != "ses_a" || call.CallID != "call_prt_1" || call.MessageID != "msg_1" {
		t.Fatalf("find: %+v %v", call, ok)
	}
	c.observe(partUpdated("prt_3", "ses_c", "my_server_io_deploy", "pending"))
	if _, ok := c.find(context.Background(), deploy, 0); ok {
		t.Fatal("two calls in flight: one was chosen")
	}
	c.observe(partUpdated("prt_3", "ses_c", "my_server_io_deploy", "completed"))
	c.observe([]byte(`{"type":"session.deleted","properties":{"info":{"id":"ses_a"}}}`))
	if call, ok := c.find(context.Background(), deploy, 0); ok {
		t.Fatalf("every call ended, yet %+v was found", call)
	}
	c.observe([]byte(`not json`))
	c.observe([]byte(`{"type":"message.part.updated","properties":{"part":{"type":"text","id":"prt_9"}}}`))
	if _, other := c.byPart["prt_2"]; len(c.byPart) != 1 || !other {
		t.Fatalf("calls kept: %+v; want only the other tool's", c.byPart)
	}
}

// A question that reaches questiond before the call's announcement waits
// for it, while a stream tells the calls; without one it does not wait.
func TestCallsWaitForTheAnnouncement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCalls()
		c.watching.Store(true)
		go func() {
			time.Sleep(500 * time.Millisecond)
			c.observe(partUpdated("prt_1", "ses_a", "my_server_io_deploy", "running"))
		}()
		start := time.Now()
		call, ok := c.find(context.Background(), deploy, 2*time.Second)
		if !ok || call.SessionID != "ses_a" || time.Since(start) != 500*time.Millisecond {
			t.Fatalf("find: %+v %v after %v", call, ok, time.Since(start))
		}
		c.reset()
		start = time.Now()
		if _, ok := c.find(context.Background(), deploy, 2*time.Second); ok || time.Since(start) != 2*time.Second {
			t.Fatalf("no call: found %v after %v", ok, time.Since(start))
		}
		c.watching.Store(false)
		start = time.Now()
		if _, ok := c.find(context.Background(), deploy, 2*time.Second); ok || time.Since(start) != 0 {
			t.Fatalf("not watching: waited %v", time.Since(start))
		}
	})
}
