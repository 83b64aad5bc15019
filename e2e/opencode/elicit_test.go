package opencode

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
	"github.com/questiond/questiond/internal/testserver"
)

const agentToken = "opencode-bridge-agent-token-0123456789"

// wantResult is the upstream tool's text for the operator's answer below:
// the title "Production" typed as its const, "3" as an integer, "Yes" as
// true, and the note left empty as its default.
const wantResult = "released v2.3: target=prd replicas=3 confirm=true note=none"

// OpenCode, configured as docs/bridge.md shows, runs `questiond bridge` in
// front of an MCP server whose tool elicits a form. The model calls the
// tool; the question reaches questiond's operators (asked with the agent
// token the config gives the bridge: this questiond takes questions from
// no agent without one; the upstream's message, its properties in its
// order); the operator answers over HTTP; and OpenCode's own session
// history holds the tool's result made of the typed answer, which its
// model got too. A second call, declined, ends with the upstream's own
// result for a decline.
func TestOpencodeAnswersAnElicitationThroughTheBridge(t *testing.T) {
	testenv.Heavy(t, "runs the real OpenCode, questiond bridge and an MCP server as processes")
	srv := questiond(t)
	key, section := bridged(t, testkit.Binary(t), opencodeserve.Upstream(), srv.URL, agentToken)
	oc := opencodeserve.Start(t, opencodeserve.Binary(t), key, section)
	ops := testkit.Watch(t, srv.URL)
	session := oc.Prompt("Release v2.3, please.")
	q := oc.Asked(ops, session, key+"_release")
	var headers []string
	for _, info := range q.Questions {
		headers = append(headers, info.Header)
	}
	if strings.Join(headers, ",") != "Target,Replicas,Confirm,Note" || !strings.Contains(q.Questions[0].Question, "Release v2.3?") {
		t.Fatalf("operators see %+v; want the upstream's message, its properties in its order", q)
	}
	ops.Reply(q, map[string][]string{"Target": {"Production"}, "Replicas": {"3"}, "Confirm": {"Yes"}, "Note": {}})
	call := oc.ToolEnded(session, key+"_release")
	t.Logf("OpenCode's history: %v", call)
	if call.Status != "completed" || !strings.Contains(call.Output, wantResult) || !strings.Contains(string(call.Input), `"v2.3"`) {
		t.Fatalf("OpenCode's history holds the call %v; want it completed with %q", call, wantResult)
	}
	if !oc.ToolResultSent(wantResult) {
		t.Fatalf("OpenCode did not send its model the tool's result %q", wantResult)
	}

	// Declined: the upstream hears "decline", and says so in its result.
	session = oc.Prompt("Release v2.3 again.")
	ops.Reject(oc.Asked(ops, session, key+"_release").ID, "decline")
	call = oc.ToolEnded(session, key+"_release")
	if call.Status != "completed" || !strings.Contains(call.Output, "not released: decline") {
		t.Fatalf("OpenCode's history holds the declined call %v", call)
	}
	if left := ops.Pending(""); len(left) != 0 {
		t.Fatalf("questions still pending after the answers: %+v", left)
	}
}

// The same server configured without the bridge cannot elicit under
// OpenCode: OpenCode declares no elicitation, so the tool's call ends in
// its error, and that is what OpenCode's history and its model get.
func TestOpencodeCannotElicitWithoutTheBridge(t *testing.T) {
	testenv.Heavy(t, "runs the real OpenCode and an MCP server as processes")
	key, section := direct(t, opencodeserve.Upstream())
	oc := opencodeserve.Start(t, opencodeserve.Binary(t), key, section)
	session := oc.Prompt("Release v2.3, please.")
	call := oc.ToolEnded(session, key+"_release")
	t.Logf("OpenCode's history: %v", call)
	failure := call.Output + call.Error
	if strings.Contains(failure, "released v2.3") || !strings.Contains(failure, "elicitation failed: client does not support elicitation") {
		t.Fatalf("OpenCode's history holds the call %v; want the elicitation to fail", call)
	}
	if !oc.ToolResultSent("client does not support elicitation") {
		t.Fatal("OpenCode did not send its model the tool's failure")
	}
}

// OpenCode gives a tool call a deadline (60 s by default, "timeout" in
// its config) that progress resets, and a human may take longer: the
// bridge sends progress while the question waits, so an answer given after
// the deadline still completes the call.
func TestOpencodeWaitsForAnOperatorSlowerThanItsTimeout(t *testing.T) {
	testenv.Heavy(t, "runs the real OpenCode, questiond bridge and an MCP server as processes")
	srv := questiond(t)
	key, section := bridged(t, testkit.Binary(t), opencodeserve.Upstream(), srv.URL, agentToken)
	entry := section[key].(map[string]any)
	const deadline = 4 * time.Second
	entry["timeout"] = deadline.Milliseconds()
	command := entry["command"].([]string)
	entry["command"] = append([]string{command[0], command[1], "--keep-alive", "1s"}, command[2:]...)
	oc := opencodeserve.Start(t, opencodeserve.Binary(t), key, section)
	ops := testkit.Watch(t, srv.URL)
	session := oc.Prompt("Release v2.3, please.")
	q := oc.Asked(ops, session, key+"_release")
	time.Sleep(deadline + 3*time.Second) // the operator thinks past OpenCode's deadline
	ops.Reply(q, map[string][]string{"Target": {"Production"}, "Replicas": {"3"}, "Confirm": {"Yes"}, "Note": {}})
	call := oc.ToolEnded(session, key+"_release")
	if call.Status != "completed" || !strings.Contains(call.Output, wantResult) {
		t.Fatalf("OpenCode's history holds the call %v; want it completed with %q after the operator's slow answer", call, wantResult)
	}
}

// questiond is the daemon OpenCode's bridge asks: it takes questions only
// from an agent with agentToken.
func questiond(t *testing.T) *testserver.Server {
	t.Helper()
	return testkit.Serve(t, testserver.Config{
		Events:      sse.Options{Heartbeat: time.Hour},
		Logger:      zaptest.NewLogger(t),
		DatabaseURL: testkit.DatabaseURL(t),
		API:         daemon.APIOptions{Auth: daemon.APIAuth{AgentTokens: map[string]string{"opencode": agentToken}}},
	})
}
