package mcptasks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/pending"
)

// fakeQuestions is a store of questions by id; Withdraw ends a pending one
// as withdrawn and leaves an ended one as it ended.
type fakeQuestions struct {
	byID      map[string]*pending.Question
	withdrawn []string
}

func (f *fakeQuestions) Get(_ context.Context, id string) (*pending.Question, error) {
	q, ok := f.byID[id]
	if !ok {
		return nil, pending.ErrNotFound
	}
	return q, nil
}

func (f *fakeQuestions) Withdraw(id string, ending pending.Ending) (*pending.Question, error) {
	q := f.byID[id]
	f.withdrawn = append(f.withdrawn, id)
	if q.Ended == nil {
		q.Ended = &pending.Outcome{Ending: ending, Result: pending.Result{Action: pending.ActionCancel}, At: q.CreatedAt.Add(time.Minute)}
	}
	return q, nil
}

var created = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func question(id, owner string, ended *pending.Outcome) *pending.Question {
	return &pending.Question{ID: id, Owner: owner, CreatedAt: created, Ended: ended}
}

func TestStatusOfEveryEnding(t *testing.T) {
	for _, c := range []struct {
		ending pending.Ending
		want   string
	}{
		{"", StatusWorking},
		{pending.EndReplied, StatusCompleted},
		{pending.EndRejected, StatusCompleted},
		{pending.EndTimeout, StatusCompleted},
		{pending.EndWithdrawn, StatusCancelled},
		{pending.EndDisconnected, StatusFailed},
		{pending.EndShutdown, StatusFailed},
	} {
		q := question("q", "", nil)
		if c.ending != "" {
			q.Ended = &pending.Outcome{Ending: c.ending}
		}
		if got, message := Status(q); got != c.want || message == "" {
			t.Errorf("%q: status %q (%q), want %q", c.ending, got, message, c.want)
		}
	}
}

// ttlMs counts from the creation: until now plus the retention while the
// question waits (it is never forgotten meanwhile), until its ending plus
// the retention once it ended.
func TestTaskTTL(t *testing.T) {
	now := created.Add(10 * time.Minute)
	tasks := New(Options{Retention: time.Hour, Now: func() time.Time { return now }})
	if got := tasks.task(question("q", "", nil)); got.TTLMs != (70*time.Minute).Milliseconds() || got.LastUpdatedAt != "2026-12-06T12:00:00.000Z" {
		t.Errorf("pending: %+v", got)
	}
	done := question("q", "", &pending.Outcome{Ending: pending.EndReplied, At: created.Add(3 * time.Minute)})
	if got := tasks.task(done); got.TTLMs != (63*time.Minute).Milliseconds() || got.LastUpdatedAt != "2026-12-06T12:03:00.000Z" || got.CreatedAt != "2026-12-06T12:00:00.000Z" {
		t.Errorf("ended: %+v", got)
	}
	if got := New(Options{}).task(done); got.TTLMs != (3*time.Minute+pending.DefaultRetention).Milliseconds() || got.PollIntervalMs != DefaultPollInterval.Milliseconds() {
		t.Errorf("defaults: %+v", got)
	}
}

func TestDeclared(t *testing.T) {
	for meta, want := range map[string]bool{
		`{}`: false,
		`{"io.modelcontextprotocol/clientCapabilities":{}}`:                                                       false,
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"other/ext":{}}}}`:                          false,
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`:      true,
		`{"io.modelcontextprotocol/clientCapabilities":"io.modelcontextprotocol/tasks"}`:                          false,
		`{"io.modelcontextprotocol/tasks":{}}`:                                                                    false,
		`{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{"x":1}}}}`: true,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(meta), &m); err != nil {
			t.Fatal(err)
		}
		if got := Declared(m); got != want {
			t.Errorf("Declared(%s) = %v", meta, got)
		}
	}
}

func TestCheckRoutingHeader(t *testing.T) {
	header := func(values ...string) http.Header {
		h := http.Header{}
		for _, v := range values {
			h.Add("Mcp-Name", v)
		}
		return h
	}
	for _, c := range []struct {
		method, params string
		header         http.Header
		says           string // "": accepted
	}{
		{MethodGet, `{"taskId":"que_1"}`, header("que_1"), ""},
		{MethodGet, `{"taskId":"que_1"}`, header(" que_1 "), ""}, // optional whitespace (RFC 9110)
		{MethodCancel, `{"taskId":"que_1"}`, header(), "missing required Mcp-Name"},
		{MethodUpdate, `{"taskId":"que_1"}`, header("que_2"), "does not match"},
		{MethodGet, `{"taskId":"que_1"}`, header("que_1", "que_1"), "does not match"},
		{MethodGet, `{"taskId":5}`, header(), ""}, // the method names the bad field
		{MethodGet, `{}`, header(), ""},
		{"tools/list", `{}`, header(), ""},
	} {
		err := CheckRoutingHeader(c.method, json.RawMessage(c.params), c.header)
		if (err == nil) != (c.says == "") || (err != nil && !strings.Contains(err.Error(), c.says)) {
			t.Errorf("%s %s %v: %v, want %q", c.method, c.params, c.header, err, c.says)
		}
	}
}

// Through a go-sdk client and server in memory: find refuses a request
// without the extension (-32021), another agent's task exactly like a
// missing one (-32602), and tasks/cancel withdraws only a pending question.
func TestMethods(t *testing.T) {
	defer goleak.VerifyNone(t) // after the sessions' closes, deferred below
	store := &fakeQuestions{byID: map[string]*pending.Question{
		"mine":   question("mine", "alpha", nil),
		"theirs": question("theirs", "bravo", nil),
		"done":   question("done", "alpha", &pending.Outcome{Ending: pending.EndReplied, At: created}),
		"failed": question("failed", "alpha", &pending.Outcome{Ending: pending.EndShutdown, At: created}),
	}}
	tasks := New(Options{Questions: store, Result: func(q *pending.Question) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer of " + q.ID}}}, nil
	}})
	server := mcp.NewServer(&mcp.Implementation{Name: "test"}, nil)
	tasks.Serve(server, "alpha")
	ctx := context.Background()
	serverSide, clientSide := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "client"}, nil)
	for _, m := range []string{MethodGet, MethodCancel} {
		if err := mcp.AddSendingCustomMethod[*Params, *DetailedTask](client, m); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := client.Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	declared := mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": Capability()}}
	call := func(method, id string, meta mcp.Meta) (*DetailedTask, *jsonrpc.Error) {
		t.Helper()
		raw, _ := json.Marshal(id)
		res, err := mcp.CallCustomMethod[*Params, *DetailedTask](ctx, cs, method, &Params{ParamsBase: mcp.ParamsBase{Meta: meta}, TaskID: raw})
		var wire *jsonrpc.Error
		if err != nil && !errors.As(err, &wire) {
			t.Fatalf("%s %s: %v", method, id, err)
		}
		return res, wire
	}
	if _, err := call(MethodGet, "mine", nil); err == nil || err.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Errorf("tasks/get without the extension: %v", err)
	}
	_, theirs := call(MethodGet, "theirs", declared)
	_, missing := call(MethodGet, "nothing", declared)
	if theirs == nil || missing == nil || theirs.Code != jsonrpc.CodeInvalidParams ||
		strings.Replace(theirs.Message, "theirs", "nothing", 1) != missing.Message {
		t.Errorf("another agent's task %v, a missing one %v", theirs, missing)
	}
	if got, err := call(MethodGet, "done", declared); err != nil || got.Status != StatusCompleted || got.Result == nil || got.Error != nil {
		t.Errorf("a completed task: %+v %v", got, err)
	}
	if got, err := call(MethodGet, "failed", declared); err != nil || got.Status != StatusFailed || got.Result != nil || got.Error == nil || got.Error.Code != jsonrpc.CodeInternalError {
		t.Errorf("a failed task: %+v %v", got, err)
	}
	for _, id := range []string{"mine", "mine", "done"} {
		if _, err := call(MethodCancel, id, declared); err != nil {
			t.Errorf("tasks/cancel %s: %v", id, err)
		}
	}
	if _, err := call(MethodCancel, "theirs", declared); err == nil {
		t.Error("alpha cancelled bravo's task")
	}
	if strings.Join(store.withdrawn, ",") != "mine" || store.byID["theirs"].Ended != nil {
		t.Errorf("withdrawn %v; bravo's task ended %+v", store.withdrawn, store.byID["theirs"].Ended)
	}
	if got, err := call(MethodGet, "mine", declared); err != nil || got.Status != StatusCancelled {
		t.Errorf("a cancelled task: %+v %v", got, err)
	}
}
