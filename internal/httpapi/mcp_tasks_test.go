package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testserver"
)

// The question tools as MCP tasks (io.modelcontextprotocol/tasks, SEP-2663)
// for 2026-07-28 requests that declare the extension (docs/mcp.md, "Tasks").

// tasksMeta is the _meta of a 2026-07-28 request whose client declares the
// tasks extension.
const tasksMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"tasks-agent","version":"1"}}`

// rpcReply is one JSON-RPC answer on /mcp, with its HTTP status.
type rpcReply struct {
	status int
	raw    []byte
	Result map[string]json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// str is the result's member name as a string ("" when absent).
func (r rpcReply) str(name string) string {
	var s string
	_ = json.Unmarshal(r.Result[name], &s)
	return s
}

var rpcIDs = make(chan int, 1)

func init() { rpcIDs <- 1 }

func nextRPCID() int {
	id := <-rpcIDs
	rpcIDs <- id + 1
	return id
}

// tasksRPC sends one stateless request with params (a JSON object), with
// the routing headers a client sends (Mcp-Name: the tool or the task)
// unless headers override them.
func tasksRPC(t *testing.T, h *harness, path, method, params string, headers ...string) rpcReply {
	t.Helper()
	var named struct {
		Name   string
		TaskID any `json:"taskId"`
	}
	_ = json.Unmarshal([]byte(params), &named)
	if id, ok := named.TaskID.(string); ok {
		headers = append([]string{"Mcp-Name", id}, headers...)
	}
	// Bounded: a tools/call that does not become a task waits for an
	// answer nobody gives.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := statelessPost(ctx, t, h, path,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, nextRPCID(), method, params), headers...)
	reply := rpcReply{status: res.StatusCode, raw: firstMessage(t, res)}
	if err := json.Unmarshal(reply.raw, &reply); err != nil {
		t.Fatalf("%s: %d %s: %v", method, reply.status, reply.raw, err)
	}
	return reply
}

func taskParams(id string) string {
	return `{"_meta":` + tasksMeta + `,"taskId":` + quote(id) + `}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// createTask calls the question tool as a task and returns the
// CreateTaskResult.
func createTask(t *testing.T, h *harness, path string, headers ...string) rpcReply {
	t.Helper()
	args, _ := json.Marshal(twoPrompts())
	got := tasksRPC(t, h, path, "tools/call", `{"_meta":`+tasksMeta+`,"name":"ask_user_question","arguments":`+string(args)+`}`, headers...)
	if got.status != http.StatusOK || got.Error != nil || got.str("resultType") != "task" || got.str("taskId") == "" {
		t.Fatalf("tools/call as a task: %d %s", got.status, got.raw)
	}
	return got
}

func getTask(t *testing.T, h *harness, id string, headers ...string) rpcReply {
	t.Helper()
	got := tasksRPC(t, h, "/mcp", "tasks/get", taskParams(id), headers...)
	if got.status != http.StatusOK || got.Error != nil || got.str("taskId") != id || got.str("resultType") != "complete" {
		t.Fatalf("tasks/get %s: %d %s", id, got.status, got.raw)
	}
	return got
}

// wantAck checks the empty acknowledgement of tasks/update and
// tasks/cancel: resultType "complete" and no task members.
func wantAck(t *testing.T, what string, got rpcReply) {
	t.Helper()
	if got.status != http.StatusOK || got.Error != nil || got.str("resultType") != "complete" {
		t.Fatalf("%s: %d %s, want the empty ack", what, got.status, got.raw)
	}
	for _, member := range []string{"taskId", "status", "result", "error", "inputRequests"} {
		if _, ok := got.Result[member]; ok {
			t.Errorf("%s: the ack carries %q: %s", what, member, got.raw)
		}
	}
}

var isoTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

// A client that declares the tasks extension gets its question's task at
// once: a flat CreateTaskResult, the same id operators see, working until
// the operator answers; then tasks/get inlines exactly the result the tool
// returns when it waits, and the task stays readable.
func TestMCPTaskAskRoundTrip(t *testing.T) {
	h := newHarnessWith(t, tuning{store: pending.Options{Retention: 10 * time.Minute}}, zaptest.NewLogger(t))
	events := h.openStream("/event")
	events.expect(t, "server.connected")

	discover := tasksRPC(t, h, "/mcp", "server/discover", `{"_meta":`+tasksMeta+`}`)
	var caps struct {
		Extensions map[string]any `json:"extensions"`
		Tasks      any            `json:"tasks"`
	}
	if err := json.Unmarshal(discover.Result["capabilities"], &caps); err != nil || caps.Extensions["io.modelcontextprotocol/tasks"] == nil || caps.Tasks != nil {
		t.Fatalf("server/discover does not declare the extension (and only under extensions): %s", discover.raw)
	}

	created := createTask(t, h, "/mcp?session=ses_tasks")
	id := created.str("taskId")
	asked, sessionID := askedProps(t, events.expect(t, "question.asked"))
	if asked != id || sessionID != "ses_tasks" {
		t.Fatalf("the task is %s; operators were asked %s in %s", id, asked, sessionID)
	}
	if created.str("status") != "working" || !isoTime.MatchString(created.str("createdAt")) || !isoTime.MatchString(created.str("lastUpdatedAt")) {
		t.Errorf("CreateTaskResult: %s", created.raw)
	}
	var ttl, poll json.Number
	_ = json.Unmarshal(created.Result["ttlMs"], &ttl)
	_ = json.Unmarshal(created.Result["pollIntervalMs"], &poll)
	if n, err := ttl.Int64(); err != nil || n < (10*time.Minute).Milliseconds() || n > (11*time.Minute).Milliseconds() {
		t.Errorf("ttlMs %s, want the store's retention (10 min) and the time waited so far, as integer milliseconds", created.Result["ttlMs"])
	}
	if n, err := poll.Int64(); err != nil || n <= 0 {
		t.Errorf("pollIntervalMs %s", created.Result["pollIntervalMs"])
	}
	for _, member := range []string{"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval", "content"} {
		if _, ok := created.Result[member]; ok {
			t.Errorf("CreateTaskResult carries %q: %s", member, created.raw)
		}
	}

	// The call's POST is over; the question waits, and so does the task.
	working := getTask(t, h, id)
	if working.str("status") != "working" || working.Result["result"] != nil || working.Result["error"] != nil {
		t.Errorf("tasks/get while pending: %s", working.raw)
	}
	wantAck(t, "tasks/update of a working task", tasksRPC(t, h, "/mcp", "tasks/update",
		`{"_meta":`+tasksMeta+`,"taskId":`+quote(id)+`,"inputResponses":{"unknown":{"action":"accept"}}}`))
	if still := getTask(t, h, id); still.str("status") != "working" {
		t.Errorf("after tasks/update: %s", still.raw)
	}

	if res := h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"SQLite"}, {"soon"}}}); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	wantEndedEvent(t, events, "question.replied", id)
	done := getTask(t, h, id)
	var result struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		Meta              map[string]any  `json:"_meta"`
	}
	if err := json.Unmarshal(done.Result["result"], &result); err != nil || done.str("status") != "completed" || done.Result["error"] != nil {
		t.Fatalf("tasks/get once answered: %s", done.raw)
	}
	wantText := `User has answered your questions: "Which database?"="SQLite", "Anything else?"="soon". You can now continue with the user's answers in mind.`
	if len(result.Content) != 1 || result.Content[0].Text != wantText || string(result.StructuredContent) != `{"action":"accept","answers":[["SQLite"],["soon"]]}` || result.IsError {
		t.Errorf("the inlined result: %s", done.Result["result"])
	}
	if result.Meta["io.modelcontextprotocol/related-task"] != nil {
		t.Errorf("the inlined result names its task in _meta: %s", done.Result["result"])
	}
	if done.str("lastUpdatedAt") < done.str("createdAt") {
		t.Errorf("lastUpdatedAt before createdAt: %s", done.raw)
	}
	// Cancelling a task that completed is acknowledged the same way and
	// changes nothing.
	wantAck(t, "tasks/cancel of a completed task", tasksRPC(t, h, "/mcp", "tasks/cancel", taskParams(id)))
	if again := getTask(t, h, id); again.str("status") != "completed" {
		t.Errorf("after cancelling a completed task: %s", again.raw)
	}
}

// tasks/cancel withdraws the question (operators hear question.rejected),
// the task reads cancelled, and cancelling again is the same ack.
func TestMCPTaskCancelWithdrawsTheQuestion(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	id := createTask(t, h, "/mcp").str("taskId")
	events.expect(t, "question.asked")
	wantAck(t, "tasks/cancel", tasksRPC(t, h, "/mcp", "tasks/cancel", taskParams(id)))
	wantEndedEvent(t, events, "question.rejected", id)
	wantNothingPending(t, h)
	if got := getTask(t, h, id); got.str("status") != "cancelled" || got.Result["result"] != nil {
		t.Errorf("tasks/get after tasks/cancel: %s", got.raw)
	}
	wantAck(t, "tasks/cancel again", tasksRPC(t, h, "/mcp", "tasks/cancel", taskParams(id)))
}

// An operator's dismissal and a timeout complete the task with the result
// the waiting tool would have returned (cancel, decline), not "failed": the
// tool ran, nobody answered.
func TestMCPTaskDismissedOrTimedOutCompletes(t *testing.T) {
	h := newHarness(t, httpapi.Options{DefaultTimeout: 300 * time.Millisecond})
	declined := createTask(t, h, "/mcp").str("taskId")
	if res := h.do(http.MethodPost, "/question/"+declined+"/reject", `{"action":"decline"}`); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	got := getTask(t, h, declined)
	if got.str("status") != "completed" || !strings.Contains(string(got.Result["result"]), `"structuredContent":{"action":"decline"}`) {
		t.Errorf("a declined task: %s", got.raw)
	}
	timedOut := createTask(t, h, "/mcp").str("taskId")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got = getTask(t, h, timedOut)
		if got.str("status") != "working" || time.Now().After(deadline) {
			break
		}
	}
	if got.str("status") != "completed" || !strings.Contains(string(got.Result["result"]), `"structuredContent":{"action":"cancel"}`) ||
		!strings.Contains(string(got.Result["result"]), "Nobody answered in time") {
		t.Errorf("a timed-out task: %s", got.raw)
	}
}

// A task is its agent's alone: another agent's tasks/get, tasks/update and
// tasks/cancel get exactly the answer an id that never existed gets, and
// the question stays pending for its own agent, who can still cancel it.
func TestMCPTasksAreTheirAgentsOnly(t *testing.T) {
	h := newHarnessWith(t, tuning{api: httpapi.Options{Auth: authAlphaBravo()}}, zaptest.NewLogger(t))
	alpha, bravo := []string{"Authorization", bearerAuth(alphaToken)}, []string{"Authorization", bearerAuth(bravoToken)}
	id := createTask(t, h, "/mcp", alpha...).str("taskId")
	const never = "que_00000000000000000000000000"
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := func(id string) string {
			return `{"_meta":` + tasksMeta + `,"taskId":` + quote(id) + `,"inputResponses":{}}`
		}
		theirs := tasksRPC(t, h, "/mcp", method, params(id), bravo...)
		unknown := tasksRPC(t, h, "/mcp", method, params(never), bravo...)
		if theirs.Error == nil || theirs.Error.Code != -32602 || theirs.status != http.StatusBadRequest {
			t.Fatalf("bravo's %s of alpha's task: %d %s, want 400 with -32602", method, theirs.status, theirs.raw)
		}
		if strings.ReplaceAll(theirs.Error.Message, id, never) != unknown.Error.Message || theirs.Result != nil {
			t.Errorf("bravo's %s tells alpha's task (%q) from a missing one (%q)", method, theirs.Error.Message, unknown.Error.Message)
		}
	}
	if got := getTask(t, h, id, alpha...); got.str("status") != "working" {
		t.Fatalf("alpha's task after bravo's tries: %s", got.raw)
	}
	wantAck(t, "alpha's tasks/cancel", tasksRPC(t, h, "/mcp", "tasks/cancel", taskParams(id), alpha...))
	if got := getTask(t, h, id, alpha...); got.str("status") != "cancelled" {
		t.Errorf("alpha's task after its cancel: %s", got.raw)
	}
}

// Without the extension in the request's _meta, a tool call waits as
// before and the tasks methods are refused with -32021 naming the
// extension; stateful sessions (2025-11-25 and older) are not offered it.
func TestMCPTasksNeedTheExtension(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		got := tasksRPC(t, h, "/mcp", method, `{"_meta":`+statelessMeta(protocol2026, "")+`,"taskId":"que_x","inputResponses":{}}`)
		if got.status != http.StatusBadRequest || got.Error == nil || got.Error.Code != -32021 ||
			!strings.Contains(string(got.Error.Data), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
			t.Errorf("%s without the extension: %d %s", method, got.status, got.raw)
		}
	}
	cs := mcpConnect(t, h, "/mcp?session=ses_stateful", nil, nil)
	if caps := cs.InitializeResult().Capabilities; caps.Extensions != nil {
		t.Errorf("a stateful session is offered extensions %v", caps.Extensions)
	}
}

// Bad params are refused with -32602 naming the field, routing headers that
// differ from the body with -32020 (HTTP 400), and the methods SEP-2663
// removed are unknown.
func TestMCPTasksBadInput(t *testing.T) {
	h := newHarness(t, httpapi.Options{})
	id := createTask(t, h, "/mcp").str("taskId")
	for _, c := range []struct {
		method, params string
		headers        []string
		code           int
		status         int
		says           string
	}{
		{"tasks/get", `{"_meta":` + tasksMeta + `}`, nil, -32602, 400, "params.taskId is missing"},
		{"tasks/get", `{"_meta":` + tasksMeta + `,"taskId":5}`, []string{"Mcp-Name", "5"}, -32602, 400, "params.taskId must be a string"},
		{"tasks/cancel", `{"_meta":` + tasksMeta + `,"taskId":""}`, nil, -32602, 400, "params.taskId must not be empty"},
		{"tasks/update", `{"_meta":` + tasksMeta + `,"taskId":` + quote(id) + `}`, nil, -32602, 400, "params.inputResponses is missing"},
		{"tasks/update", `{"_meta":` + tasksMeta + `,"taskId":` + quote(id) + `,"inputResponses":[1]}`, nil, -32602, 400, "params.inputResponses must be an object"},
		{"tasks/get", taskParams(id), []string{"Mcp-Name", "que_other"}, -32020, 400, "does not match params.taskId"},
		{"tasks/cancel", taskParams(id), []string{"Mcp-Name", ""}, -32020, 400, "missing required Mcp-Name header"},
		{"tasks/result", taskParams(id), nil, -32601, 404, "tasks/result"},
		{"tasks/list", `{"_meta":` + tasksMeta + `}`, nil, -32601, 404, "tasks/list"},
	} {
		got := tasksRPC(t, h, "/mcp", c.method, c.params, c.headers...)
		if got.status != c.status || got.Error == nil || got.Error.Code != c.code || !strings.Contains(got.Error.Message, c.says) {
			t.Errorf("%s %s %v: %d %s, want %d with %d saying %q", c.method, c.params, c.headers, got.status, got.raw, c.status, c.code, c.says)
		}
	}
	if got := getTask(t, h, id); got.str("status") != "working" {
		t.Errorf("the task after bad requests about it: %s", got.raw)
	}
}

// A task lives in the store, not in the process: after questiond restarts
// on its bolt file, tasks/get still finds it pending, and the answer given
// then (several picks, read back from disk) is inlined as the tool gives it.
func TestMCPTaskSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "questiond.db")
	start := func() *testserver.Server {
		srv, err := testserver.Start(testserver.Config{BoltPath: path, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	h := &harness{t: t, URL: srv.URL}
	args := `{"questions":[{"question":"Which regions?","header":"Regions","multiple":true,"options":[{"label":"eu"},{"label":"us"},{"label":"ap"}]}]}`
	created := tasksRPC(t, h, "/mcp", "tools/call", `{"_meta":`+tasksMeta+`,"name":"ask_user_question","arguments":`+args+`}`)
	id := created.str("taskId")
	if id == "" {
		t.Fatalf("tools/call: %s", created.raw)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	srv = start()
	t.Cleanup(func() { _ = srv.Stop() })
	h.URL = srv.URL
	if got := getTask(t, h, id); got.str("status") != "working" {
		t.Fatalf("tasks/get after a restart: %s", got.raw)
	}
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"eu", "ap"}}}); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	srv = start()
	h.URL = srv.URL
	got := getTask(t, h, id)
	if got.str("status") != "completed" || !strings.Contains(string(got.Result["result"]), `"structuredContent":{"action":"accept","answers":[["eu","ap"]]}`) ||
		!strings.Contains(string(got.Result["result"]), `\"Which regions?\"=\"eu, ap\"`) {
		t.Errorf("tasks/get of a task answered before a restart: %s", got.raw)
	}
}

// Any replica answers for a task: created on one PostgreSQL replica, it is
// read, answered and cancelled through the other, and still another
// agent's on neither.
func TestMCPTaskOnAnyReplica(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	tu := tuning{api: httpapi.Options{Auth: authAlphaBravo()}, database: url}
	a, b := newHarnessWith(t, tu, zaptest.NewLogger(t)), newHarnessWith(t, tu, zaptest.NewLogger(t))
	alpha, bravo := []string{"Authorization", bearerAuth(alphaToken)}, []string{"Authorization", bearerAuth(bravoToken)}
	answered := createTask(t, a, "/mcp", alpha...).str("taskId")
	cancelled := createTask(t, a, "/mcp", alpha...).str("taskId")
	if got := getTask(t, b, answered, alpha...); got.str("status") != "working" {
		t.Fatalf("the other replica's tasks/get: %s", got.raw)
	}
	if got := tasksRPC(t, b, "/mcp", "tasks/get", taskParams(answered), bravo...); got.Error == nil || got.Error.Code != -32602 {
		t.Errorf("bravo's tasks/get of alpha's task on the other replica: %s", got.raw)
	}
	if res := b.do(http.MethodPost, "/question/"+answered+"/reply", map[string]any{"answers": [][]string{{"SQLite"}, {"soon"}}},
		"Authorization", basicAuth("opencode", operatorPassword)); res.Status != http.StatusOK {
		t.Fatalf("reply on the other replica: %d %s", res.Status, res.Body)
	}
	wantAck(t, "tasks/cancel on the other replica", tasksRPC(t, b, "/mcp", "tasks/cancel", taskParams(cancelled), alpha...))
	for _, c := range []struct{ id, status string }{{answered, "completed"}, {cancelled, "cancelled"}} {
		got := getTask(t, a, c.id, alpha...)
		for deadline := time.Now().Add(10 * time.Second); got.str("status") == "working" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			got = getTask(t, a, c.id, alpha...)
		}
		if got.str("status") != c.status {
			t.Errorf("the first replica's tasks/get of %s: %s, want %s", c.id, got.raw, c.status)
		}
	}
}
