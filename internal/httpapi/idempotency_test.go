package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testserver"
)

const keyHeader = "Idempotency-Key"

// askedFrameID reads the id of a question.asked frame.
func askedFrameID(t *testing.T, f frame) string {
	t.Helper()
	var q struct{ ID string }
	if err := json.Unmarshal(f.Properties, &q); err != nil || q.ID == "" {
		t.Fatalf("question.asked without an id: %s", f.Raw)
	}
	return q.ID
}

// pendingIDs lists the pending questions operators see.
func (h *harness) pendingIDs() []string {
	h.t.Helper()
	var list []struct{ ID string }
	h.do(http.MethodGet, "/question", nil).json(h.t, &list)
	ids := make([]string, len(list))
	for i, q := range list {
		ids[i] = q.ID
	}
	return ids
}

func wantError(t *testing.T, res response, status int, name string) {
	t.Helper()
	var body struct {
		Name string
		Data struct{ Message, Kind string }
	}
	res.json(t, &body)
	if res.Status != status || body.Name != name || !strings.Contains(body.Data.Message, keyHeader) {
		t.Fatalf("got %d %s, want %d %s naming %s", res.Status, res.Body, status, name, keyHeader)
	}
}

// The same key and body twice ask one question: one question.asked, and the
// retry answers 201 with that elicitation as it is now, marked as a replay.
// Spacing and member order are not part of the request.
func TestIdempotentCreateAsksOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	first := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1")
	if first.Status != http.StatusCreated || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first create: %d %v %s", first.Status, first.Header, first.Body)
	}
	var c created
	first.json(t, &c)

	form, _ := json.Marshal(seedForm())
	var reordered map[string]any
	_ = json.Unmarshal(form, &reordered)
	again, _ := json.MarshalIndent(reordered, "", "   ")
	retry := h.do(http.MethodPost, "/elicitations", string(again), keyHeader, `"k-1"`) // the draft's spelling
	var r created
	retry.json(t, &r)
	if retry.Status != http.StatusCreated || r.ID != c.ID || retry.Header.Get("Idempotent-Replayed") != "true" ||
		retry.Header.Get("Location") != "/elicitations/"+c.ID {
		t.Fatalf("retry: %d %v %s; want 201 replaying %s", retry.Status, retry.Header, retry.Body, c.ID)
	}
	other := h.create(seedForm()) // unkeyed: a question of its own
	if got := askedFrameID(t, events.expect(t, "question.asked")); got != c.ID {
		t.Fatalf("asked %s, want %s", got, c.ID)
	}
	if got := askedFrameID(t, events.expect(t, "question.asked")); got != other.ID {
		t.Fatalf("the event after the first question.asked is about %s, want the unkeyed %s", got, other.ID)
	}
	if ids := h.pendingIDs(); len(ids) != 2 {
		t.Fatalf("pending %v, want 2 questions", ids)
	}

	// After the answer, a retry sees the elicitation as it is now.
	h.do(http.MethodPost, "/question/"+c.ID+"/reply", `{"answers":[["SY215C"],[]]}`)
	late := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1")
	var l created
	late.json(t, &l)
	if late.Status != http.StatusCreated || l.ID != c.ID || l.Status != "resolved" || l.Result == nil || l.Result.Action != "accept" {
		t.Fatalf("retry after the answer: %d %s", late.Status, late.Body)
	}
}

// A key sent again with another request is a caller's mistake: 422, and
// nothing is asked. The two create routes are different requests.
func TestIdempotencyKeyWithAnotherRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	h.create(seedForm()) // unkeyed
	first := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1")
	if first.Status != http.StatusCreated {
		t.Fatalf("first create: %d %s", first.Status, first.Body)
	}
	changed := seedForm()
	changed["message"] = "Diagnose the other machine"
	wantError(t, h.do(http.MethodPost, "/elicitations", changed, keyHeader, "k-1"), http.StatusUnprocessableEntity, "UnprocessableContent")
	wantError(t, h.do(http.MethodPost, "/elicit", seedForm(), keyHeader, "k-1"), http.StatusUnprocessableEntity, "UnprocessableContent")
	rpc := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": seedForm()}
	wantError(t, h.do(http.MethodPost, "/elicit", rpc, keyHeader, "k-1"), http.StatusUnprocessableEntity, "UnprocessableContent")
	if ids := h.pendingIDs(); len(ids) != 2 {
		t.Fatalf("pending %v, want the 2 questions created", ids)
	}
}

// A request whose key is still being created by another gets 409; the first
// one goes on to create the one question.
func TestIdempotencyKeyInFlightConflicts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	parked, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	httpapi.SetOnKeyClaimed(h.api, func(string) {
		once.Do(func() { close(parked); <-resume })
	})
	firstDone := make(chan response, 1)
	go func() {
		res, err := h.request(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1")
		if err != nil {
			t.Error(err)
		}
		firstDone <- res
	}()
	<-parked
	wantError(t, h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1"), http.StatusConflict, "Conflict")
	wantError(t, h.do(http.MethodPost, "/elicit", seedForm(), keyHeader, "k-1"), http.StatusConflict, "Conflict")
	close(resume)
	if res := <-firstDone; res.Status != http.StatusCreated {
		t.Fatalf("first create: %d %s", res.Status, res.Body)
	}
	if ids := h.pendingIDs(); len(ids) != 1 {
		t.Fatalf("pending %v, want 1 question", ids)
	}
}

// Keys belong to the agent that sent them: another agent's identical key
// asks its own question and never reveals the first.
func TestIdempotencyKeysBelongToTheirAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Auth: authAgentsOnly()})
	post := func(token string) (created, response) {
		res := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "shared", "Authorization", bearerAuth(token))
		if res.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", res.Status, res.Body)
		}
		var c created
		res.json(t, &c)
		return c, res
	}
	alpha, _ := post(alphaToken)
	beta, res := post(betaToken)
	if beta.ID == alpha.ID || res.Header.Get("Idempotent-Replayed") != "" || strings.Contains(string(res.Body), alpha.ID) {
		t.Fatalf("beta's create with alpha's key answered %v %s; want a question of its own", res.Header, res.Body)
	}
	if again, res := post(alphaToken); again.ID != alpha.ID || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("alpha's retry got %s, want its own %s", again.ID, alpha.ID)
	}
	if ids := h.pendingIDs(); len(ids) != 2 {
		t.Fatalf("pending %v, want 2 questions", ids)
	}
}

// A key that is not 1 to 255 printable ASCII characters is refused with a 400
// naming the header, on both routes, and nothing is asked.
func TestIdempotencyKeyIsValidated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	body, _ := json.Marshal(seedForm())
	for name, values := range map[string][]string{
		"empty":        {""},
		"empty quoted": {`""`},
		"unterminated": {`"abc`},
		"bad escape":   {`"a\b"`},
		"after quote":  {`"a"b`},
		"non-ASCII":    {"ключ"},
		"too long":     {strings.Repeat("k", 256)},
		"sent twice":   {"a", "b"},
		"tab":          {"\"a\tb\""},
	} {
		for _, path := range []string{"/elicitations", "/elicit"} {
			t.Run(name+" "+path, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodPost, h.URL+path, strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header[keyHeader] = values
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(res.Body)
				res.Body.Close()
				wantError(t, response{Status: res.StatusCode, Header: res.Header, Body: data}, http.StatusBadRequest, "BadRequest")
				if !strings.Contains(string(data), `"kind":"Headers"`) {
					t.Fatalf("body %s, want kind Headers", data)
				}
			})
		}
	}
	long := strings.Repeat("k", 255)
	if res := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, long); res.Status != http.StatusCreated {
		t.Fatalf("a 255-character key: %d %s", res.Status, res.Body)
	}
	if ids := h.pendingIDs(); len(ids) != 1 {
		t.Fatalf("pending %v, want only the valid request's question", ids)
	}
}

// elicitCall is a POST /elicit in flight, cancelled by cancel.
type elicitCall struct {
	cancel context.CancelFunc
	done   chan response
}

func (h *harness) startElicit(body any, key string) *elicitCall {
	ctx, cancel := context.WithCancel(context.Background())
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/elicit", bytesReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(keyHeader, key)
	call := &elicitCall{cancel: cancel, done: make(chan response, 1)}
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			call.done <- response{}
			return
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		call.done <- response{Status: res.StatusCode, Header: res.Header, Body: data}
	}()
	h.t.Cleanup(cancel)
	return call
}

// A keyed POST /elicit whose connection drops keeps its question for the
// grace period; the retry (a JSON-RPC request with a new id) waits for the
// same question and gets the answer. Operators never see it withdrawn.
func TestKeyedElicitResumesAfterADisconnect(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{ReconnectGrace: time.Hour})
	armed := make(chan string, 1)
	h.api.Questions().SetTestHooks(ask.TestHooks{GraceArmed: func(id string) { armed <- id }})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	rpc := func(id int) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": seedForm()}
	}
	first := h.startElicit(rpc(1), "k-1")
	id := askedFrameID(t, events.expect(t, "question.asked"))
	first.cancel()
	<-first.done
	if got := <-armed; got != id {
		t.Fatalf("grace armed for %s, want %s", got, id)
	}
	if ids := h.pendingIDs(); len(ids) != 1 || ids[0] != id {
		t.Fatalf("pending %v after the disconnect, want %s still pending", ids, id)
	}

	retry := h.startElicit(rpc(2), "k-1")
	h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY365H"],["Low power"]]}`)
	res := <-retry.done
	var answer struct {
		ID     int
		Result struct {
			Action  string
			Content map[string]any
		}
	}
	res.json(t, &answer)
	if res.Status != http.StatusOK || res.Header.Get("X-Questiond-Request-Id") != id || answer.ID != 2 ||
		answer.Result.Action != "accept" || answer.Result.Content["model"] != "SY365H" {
		t.Fatalf("the retry got %d %v %s", res.Status, res.Header, res.Body)
	}
	events.expect(t, "question.replied") // not question.rejected
}

// With no retry, the question is withdrawn once the grace period is over,
// as an unkeyed call's is at once; a late retry gets that ending.
func TestKeyedElicitIsWithdrawnAfterTheGrace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{ReconnectGrace: time.Second})
	armed := make(chan string, 1)
	h.api.Questions().SetTestHooks(ask.TestHooks{GraceArmed: func(id string) { armed <- id }})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	first := h.startElicit(seedForm(), "k-1")
	id := askedFrameID(t, events.expect(t, "question.asked"))
	first.cancel()
	<-first.done
	<-armed
	if ids := h.pendingIDs(); len(ids) != 1 {
		t.Fatalf("pending %v right after the disconnect, want the question kept", ids)
	}
	var props struct{ RequestID string }
	_ = json.Unmarshal(events.expect(t, "question.rejected").Properties, &props)
	if props.RequestID != id {
		t.Fatalf("rejected %s, want %s", props.RequestID, id)
	}
	var got created
	h.do(http.MethodGet, "/elicitations/"+id, nil).json(t, &got)
	if got.Ending != "disconnected" || got.Result == nil || got.Result.Action != "cancel" {
		t.Fatalf("after the grace the elicitation is %+v", got)
	}
	late := h.do(http.MethodPost, "/elicit", seedForm(), keyHeader, "k-1")
	if late.Status != http.StatusOK || strings.TrimSpace(string(late.Body)) != `{"action":"cancel"}` || late.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("late retry: %d %v %s", late.Status, late.Header, late.Body)
	}
}

// Keys are kept in the durable store: after a restart the retry still gets
// the question the first attempt asked.
func TestIdempotencyKeySurvivesARestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "questiond.db")
	start := func() *testserver.Server {
		srv, err := testserver.Start(testserver.Config{BoltPath: path, Events: sse.Options{Heartbeat: time.Hour}, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Stop() })
		return srv
	}
	first := start()
	h := &harness{t: t, URL: first.URL}
	var c created
	h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1").json(t, &c)
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	second := start()
	h = &harness{t: t, URL: second.URL}
	res := h.do(http.MethodPost, "/elicitations", seedForm(), keyHeader, "k-1")
	var r created
	res.json(t, &r)
	if res.Status != http.StatusCreated || r.ID != c.ID || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after a restart: %d %v %s; want %s replayed", res.Status, res.Header, res.Body, c.ID)
	}
	changed := seedForm()
	changed["timeout"] = "5m"
	wantError(t, h.do(http.MethodPost, "/elicitations", changed, keyHeader, "k-1"), http.StatusUnprocessableEntity, "UnprocessableContent")
	if ids := h.pendingIDs(); len(ids) != 1 {
		t.Fatalf("pending %v, want 1 question", ids)
	}
}
