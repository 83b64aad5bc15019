package bridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// urlServer's tool "sign-in" asks the user to open a URL (URL mode) and
// reports the result on the returned channel; once the test says so on
// complete, it tells the client the out-of-band step is done.
func urlServer(complete <-chan struct{}) (*mcp.Server, <-chan *mcp.ElicitResult) {
	received := make(chan *mcp.ElicitResult, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream-server", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "sign-in"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		go func() {
			select {
			case <-complete:
				_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "el-1"})
			case <-ctx.Done():
			}
		}()
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in to Example Co.",
			URL: "https://auth.example.com/connect?session=el-1", ElicitationID: "el-1"})
		if err != nil {
			return nil, nil, err
		}
		received <- res
		return done, nil, nil
	})
	return server, received
}

// A URL-mode elicitation reaches the operator as a question showing the
// URL, with Open and Decline: Open is accept (consent to open it, no
// content), Decline is decline.
func TestAURLElicitationAsksTheOperatorToOpenIt(t *testing.T) {
	for _, tc := range []struct{ pick, want string }{{"Open", "accept"}, {"Decline", "decline"}} {
		t.Run(tc.pick, func(t *testing.T) {
			_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
			server, received := urlServer(nil)
			serve(t, server, upstreamEnd)
			cs := host(t, hostEnd, nil)
			out := mcptest.CallAsync(t, t.Context(), cs, "sign-in", nil)
			q := ops.Asked()
			if len(q.Questions) != 1 || !strings.Contains(q.Questions[0].Question, "https://auth.example.com/connect?session=el-1") ||
				!strings.Contains(q.Questions[0].Question, "Sign in to Example Co.") {
				t.Fatalf("the operator sees %+v; want the message and the URL", q.Questions)
			}
			ops.Reply(q, map[string][]string{q.Questions[0].Header: {tc.pick}})
			if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError {
				t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
			}
			if got := <-received; got.Action != tc.want || got.Content != nil {
				t.Fatalf("the upstream received %+v, want %s without content", got, tc.want)
			}
		})
	}
}

// The server's notifications/elicitation/complete ends the question (the
// operators see it go) and the server's request gets accept.
func TestElicitationCompleteEndsTheURLQuestion(t *testing.T) {
	_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
	complete := make(chan struct{})
	server, received := urlServer(complete)
	serve(t, server, upstreamEnd)
	cs := host(t, hostEnd, nil)
	out := mcptest.CallAsync(t, t.Context(), cs, "sign-in", nil)
	q := ops.Asked()
	close(complete)
	var ended struct{ RequestID string }
	if err := json.Unmarshal(ops.Next("question.rejected").Properties, &ended); err != nil || ended.RequestID != q.ID {
		t.Fatalf("rejected %+v, want %s", ended, q.ID)
	}
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	if got := <-received; got.Action != "accept" {
		t.Fatalf("the upstream received %+v, want accept", got)
	}
}

// A server that fails a call with URLElicitationRequiredError (-32042):
// the operator is asked to open the URL; once the server says it is
// complete, the call goes again and the host gets its result. A decline
// gives the host the server's error as it came.
func TestAURLElicitationRequiredErrorIsAskedAndTheCallSentAgain(t *testing.T) {
	for _, tc := range []struct {
		pick string
		ok   bool
	}{{"Open", true}, {"Decline", false}} {
		t.Run(tc.pick, func(t *testing.T) {
			_, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{})
			server := mcp.NewServer(&mcp.Implementation{Name: "upstream-server", Version: "1"}, nil)
			sessions := make(chan *mcp.ServerSession, 1)
			calls := 0
			mcp.AddTool(server, &mcp.Tool{Name: "connect"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				calls++
				if calls == 1 {
					sessions <- req.Session
					return nil, nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", Message: "Connect your account.",
						URL: "https://auth.example.com/oauth?e=el-9", ElicitationID: "el-9"}})
				}
				return done, nil, nil
			})
			serve(t, server, upstreamEnd)
			cs := host(t, hostEnd, nil)
			out := mcptest.CallAsync(t, t.Context(), cs, "connect", nil)
			q := ops.Asked()
			if !strings.Contains(q.Questions[0].Question, "https://auth.example.com/oauth?e=el-9") {
				t.Fatalf("the operator sees %q; want the URL", q.Questions[0].Question)
			}
			ops.Reply(q, map[string][]string{q.Questions[0].Header: {tc.pick}})
			if tc.ok {
				ss := <-sessions
				if err := ss.NotifyElicitationComplete(t.Context(), &mcp.ElicitationCompleteParams{ElicitationID: "el-9"}); err != nil {
					t.Fatal(err)
				}
			}
			o := mcptest.AwaitCall(t, out)
			switch {
			case tc.ok && (o.Err != nil || mcptest.ToolText(o.Res) != "done"):
				t.Fatalf("after the URL was opened and completed: %v %+v, want the call's result", o.Err, o.Res)
			case !tc.ok && (o.Err == nil || !strings.Contains(o.Err.Error(), "-32042") && !strings.Contains(o.Err.Error(), "URL")):
				t.Fatalf("after a decline: %v %+v, want the server's URLElicitationRequiredError", o.Err, o.Res)
			}
		})
	}
}
