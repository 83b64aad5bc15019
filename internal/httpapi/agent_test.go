package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

func TestCreateRefusesBadRequestsBeforeStoringAnything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	schema := `{"type":"object","properties":{"a":{"type":"string"}}}`
	cases := []struct {
		name, body, wantInMessage string
	}{
		{"nested object", `{"message":"m","requestedSchema":{"type":"object","properties":{"address":{"type":"object","properties":{}}}}}`, "requestedSchema.properties.address"},
		{"url mode", `{"mode":"url","message":"m","url":"https://example.com"}`, `mode \"url\" is not supported`},
		{"unknown mode", `{"mode":"voice","message":"m","requestedSchema":` + schema + `}`, `at [\"mode\"]`},
		{"no message", `{"requestedSchema":` + schema + `}`, `at [\"message\"]`},
		{"blank message", `{"message":"  ","requestedSchema":` + schema + `}`, `at [\"message\"]`},
		{"no schema", `{"message":"m"}`, `at [\"requestedSchema\"]`},
		{"message not a string", `{"message":5,"requestedSchema":` + schema + `}`, `at [\"message\"]`},
		{"bad session", `{"message":"m","sessionID":"abc","requestedSchema":` + schema + `}`, `at [\"sessionID\"]`},
		{"bad timeout", `{"message":"m","timeout":"soon","requestedSchema":` + schema + `}`, `at [\"timeout\"]`},
		{"negative timeout", `{"message":"m","timeout":"-1s","requestedSchema":` + schema + `}`, `at [\"timeout\"]`},
		{"huge timeout", `{"message":"m","timeout":"100000h","requestedSchema":` + schema + `}`, `longer than the maximum`},
		{"bad tool", `{"message":"m","tool":{"messageID":"x","callID":"c"},"requestedSchema":` + schema + `}`, `at [\"tool\"][\"messageID\"]`},
		{"not an object", `[1,2]`, `Expected object, got [1,2]`},
		{"wrong method in envelope", `{"method":"tools/call","params":{}}`, `method \"tools/call\" is not supported`},
		{"envelope params type", `{"method":"elicitation/create","params":{"message":1}}`, `at [\"params\"][\"message\"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := h.do(http.MethodPost, "/elicitations", c.body)
			if res.Status != http.StatusBadRequest {
				t.Fatalf("status %d %s, want 400", res.Status, res.Body)
			}
			var body struct {
				Name string
				Data struct{ Message, Kind string }
			}
			res.json(t, &body)
			if body.Name != "BadRequest" || body.Data.Kind != "Payload" || !strings.Contains(string(res.Body), c.wantInMessage) {
				t.Fatalf("body %s, want a BadRequest naming %s", res.Body, c.wantInMessage)
			}
		})
	}
	var listed []any
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 0 {
		t.Fatalf("refused requests left questions behind: %v", listed)
	}
	// Nothing was announced: the next event is this sentinel's.
	id := h.create(seedForm()).ID
	var q struct{ ID string }
	_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &q)
	if q.ID != id {
		t.Fatalf("an event was published for a refused request")
	}
}

func TestCreateAcceptsMCPShapes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	params, _ := json.Marshal(seedForm())
	bodies := map[string]string{
		"bare params":      string(params),
		"method envelope":  `{"method":"elicitation/create","params":` + string(params) + `}`,
		"json-rpc request": `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":` + string(params) + `}`,
		"form mode, _meta": strings.Replace(string(params), `{`, `{"mode":"form","_meta":{"progressToken":1},`, 1),
	}
	for name, body := range bodies {
		res := h.do(http.MethodPost, "/elicitations", body)
		if res.Status != http.StatusCreated {
			t.Fatalf("%s: %d %s", name, res.Status, res.Body)
		}
		var c created
		res.json(t, &c)
		if c.Status != "pending" || !strings.HasPrefix(c.ID, "que_") || !strings.HasPrefix(c.SessionID, "ses_") {
			t.Fatalf("%s: created %s", name, res.Body)
		}
		if loc := res.Header.Get("Location"); loc != "/elicitations/"+c.ID {
			t.Errorf("%s: Location %q", name, loc)
		}
	}
}

func TestCreateKeepsSessionDirectoryAndTool(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	form := seedForm()
	form["sessionID"] = "ses_dd6f26711ffemSbzc1nRWSuB5Z"
	form["tool"] = map[string]string{"messageID": "msg_2290d9d4a001UtHwsZBuH2z4id", "callID": "call_q1"}
	form["directory"] = "/home/alice/project"
	id := h.create(form).ID
	res := h.do(http.MethodGet, "/question?directory=/home/alice/project", nil)
	prefix := `[{"id":"` + id + `","sessionID":"ses_dd6f26711ffemSbzc1nRWSuB5Z","questions":[`
	suffix := `],"tool":{"messageID":"msg_2290d9d4a001UtHwsZBuH2z4id","callID":"call_q1"}}]`
	if !strings.HasPrefix(string(res.Body), prefix) || !strings.HasSuffix(string(res.Body), suffix) {
		t.Fatalf("GET /question = %s", res.Body)
	}
	// The agent reads back what it gave.
	var view struct {
		SessionID, Directory string
		Tool                 struct{ MessageID, CallID string }
	}
	h.do(http.MethodGet, "/elicitations/"+id, nil).json(t, &view)
	if view.SessionID != "ses_dd6f26711ffemSbzc1nRWSuB5Z" || view.Directory != "/home/alice/project" ||
		view.Tool.MessageID != "msg_2290d9d4a001UtHwsZBuH2z4id" || view.Tool.CallID != "call_q1" {
		t.Errorf("GET /elicitations/%s = %+v", id, view)
	}
}

func TestElicitSpeaksJSONRPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	params, _ := json.Marshal(seedForm())
	done := make(chan response, 1)
	go func() {
		res, err := h.request(http.MethodPost, "/elicit", `{"jsonrpc":"2.0","id":"req-1","method":"elicitation/create","params":`+string(params)+`}`)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var asked struct{ ID string }
	_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &asked)
	id := asked.ID
	h.do(http.MethodPost, "/question/"+id+"/reject", `{"action":"decline"}`)
	res := <-done
	if want := `{"jsonrpc":"2.0","id":"req-1","result":{"action":"decline"}}`; strings.TrimSpace(string(res.Body)) != want {
		t.Fatalf("got %s, want %s", res.Body, want)
	}

	bad := h.do(http.MethodPost, "/elicit", `{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"string"}}}`)
	var rpc struct {
		ID    int
		Error struct {
			Code    int
			Message string
		}
	}
	bad.json(t, &rpc)
	if bad.Status != 200 || rpc.ID != 2 || rpc.Error.Code != -32602 || !strings.Contains(rpc.Error.Message, "requestedSchema") {
		t.Fatalf("invalid params answered %d %s", bad.Status, bad.Body)
	}
	unknown := h.do(http.MethodPost, "/elicit", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`)
	unknown.json(t, &rpc)
	if rpc.Error.Code != -32601 {
		t.Fatalf("unknown method answered %s", unknown.Body)
	}
}

func TestGetAndDeleteErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	id := h.create(seedForm()).ID
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/elicitations/abc", 400},
		{http.MethodGet, "/elicitations/que_00000000000000000000000000", 404},
		{http.MethodGet, "/elicitations/" + id + "?wait=forever", 400},
		{http.MethodGet, "/elicitations/" + id + "?wait=-1s", 400},
		{http.MethodDelete, "/elicitations/que_00000000000000000000000000", 404},
		{http.MethodDelete, "/elicitations/" + id, 200},
		{http.MethodDelete, "/elicitations/" + id, 404},
		{http.MethodGet, "/elicitations/" + id, 200},
		{http.MethodPut, "/elicitations/" + id, 405},
		{http.MethodGet, "/question/" + id + "/reply", 405},
	} {
		if res := h.do(c.method, c.path, nil); res.Status != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, res.Status, res.Body, c.status)
		}
	}
}

func TestHealthAndCORS(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Version: "9.9.9", CORSOrigins: []string{"https://ops.example"}})
	if res := h.do(http.MethodGet, "/global/health", nil); string(res.Body) != `{"healthy":true,"version":"9.9.9"}` {
		t.Fatalf("health: %s", res.Body)
	}
	pre := h.do(http.MethodOptions, "/question/que_x/reply", nil,
		"Origin", "http://localhost:5173", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
	if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		pre.Header.Get("Access-Control-Allow-Methods") != "GET, HEAD, PUT, PATCH, POST, DELETE" ||
		pre.Header.Get("Access-Control-Allow-Headers") != "content-type" || pre.Header.Get("Access-Control-Max-Age") != "86400" {
		t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
	}
	evil := h.do(http.MethodOptions, "/question/que_x/reply", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if evil.Status != 204 || evil.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from a foreign origin: %d %v", evil.Status, evil.Header)
	}
	id := h.create(seedForm()).ID
	res := h.do(http.MethodPost, "/question/"+id+"/reject", nil, "Origin", "https://evil.example")
	if res.Status != http.StatusForbidden {
		t.Fatalf("cross-origin reject from a foreign page: %d %s", res.Status, res.Body)
	}
	ok := h.do(http.MethodGet, "/question", nil, "Origin", "https://ops.example")
	if ok.Header.Get("Access-Control-Allow-Origin") != "https://ops.example" {
		t.Fatalf("configured origin not allowed: %v", ok.Header)
	}
	var listed []any
	ok.json(t, &listed)
	if len(listed) != 1 {
		t.Fatalf("the refused reject changed the store: %v", listed)
	}
}

func TestMethodNotAllowedNamesTheAllowedMethods(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	res := h.do(http.MethodPut, "/elicitations/que_x", nil)
	if res.Status != 405 || res.Header.Get("Allow") != "GET, DELETE" {
		t.Fatalf("PUT /elicitations/{id}: %d, Allow %q", res.Status, res.Header.Get("Allow"))
	}
}

// A caller that is already gone when its request is handled gets no 500:
// the question is asked and, since nobody waits for it, withdrawn.
func TestElicitFromACallerAlreadyGoneIsNoServerError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	body, _ := json.Marshal(seedForm())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	h.api.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/elicit", bytes.NewReader(body)).WithContext(ctx))
	if rec.Code == http.StatusInternalServerError {
		t.Fatalf("POST /elicit from a caller already gone: %d %s", rec.Code, rec.Body)
	}
	if n, _ := h.store.Count(context.Background(), pending.Filter{}); n != 0 {
		t.Errorf("%d questions left pending for nobody", n)
	}
}
