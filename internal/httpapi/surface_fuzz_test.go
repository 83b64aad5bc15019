package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// documentedStatus is every status questiond answers a client with; any
// other, and above all a 500, is a bug when the input is the client's.
var documentedStatus = map[int]bool{200: true, 201: true, 202: true, 204: true, 302: true, 400: true, 403: true, 404: true, 405: true, 413: true, 415: true, 421: true, 503: true}

// surfaceMaxBody is small so that fuzzed bodies reach the 413 path.
const surfaceMaxBody = 4096

// knownForms are the questions every fuzz input finds pending: one for every
// directory, one scoped to /work/a, one scoped to /work/b with a tool.
// Targets name them {k0}, {k1} and {k2}.
var knownForms = []string{
	`{"message":"Diagnose the machine","requestedSchema":{"type":"object","properties":{` +
		`"model":{"type":"string","title":"Model","enum":["SY215C","SY365H"]},` +
		`"symptoms":{"type":"array","title":"Symptoms","items":{"type":"string","enum":["Black smoke","Low power","Overheating"]}}},` +
		`"required":["model"]}}`,
	`{"message":"Configure the rollout","directory":"/work/a","sessionID":"ses_fuzzknown","requestedSchema":{"type":"object","properties":{` +
		`"name":{"type":"string","title":"Name","minLength":2,"maxLength":10},` +
		`"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":9},` +
		`"ratio":{"type":"number","title":"Ratio"},` +
		`"canary":{"type":"boolean","title":"Canary","default":false}},` +
		`"required":["name","replicas"]}}`,
	`{"message":"Pick regions","directory":"/work/b/","tool":{"messageID":"msg_fuzz","callID":"call_1"},"timeout":"1h","requestedSchema":{"type":"object","properties":{` +
		`"regions":{"type":"array","title":"Regions","items":{"type":"string","enum":["eu","us","ap"]},"minItems":1}},` +
		`"required":["regions"]}}`,
}

// surface is a questiond with a fresh store holding the known questions.
type surface struct {
	api   *httpapi.Server
	store *pending.Store
	known []knownQuestion
}

type knownQuestion struct {
	id        string
	directory string
	record    []byte // the stored question as created, as JSON
}

// newSurfaceServer builds a questiond; stop shuts it down the way the daemon does.
func newSurfaceServer() (api *httpapi.Server, store *pending.Store, stop func() error, err error) {
	bus, err := sse.New(sse.Options{Heartbeat: time.Hour})
	if err != nil {
		return nil, nil, nil, err
	}
	events := httpapi.NewEvents(bus, nil)
	announce := ask.NewAnnouncements(nil, events)
	store = pending.New(pending.Options{OnEnd: announce.Ended})
	stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if api != nil {
			api.Questions().Drain()
		}
		_, _ = store.SettleAll(ctx, pending.Outcome{Ending: pending.EndShutdown, Result: pending.Result{Action: pending.ActionCancel}})
		err := bus.Close(ctx)
		if api != nil {
			_ = api.Questions().Release(ctx) // ends MCP sessions a fuzzed initialize opened
		}
		_ = store.Close(ctx)
		return err
	}
	opts := httpapi.Options{
		MaxWait:      time.Millisecond, // long-polls must not slow the fuzzer down
		MaxBodyBytes: surfaceMaxBody,
		OpenAPI:      []byte(`{"openapi":"3.1.0","info":{"title":"questiond","version":"0"}}`),
		AllowedHosts: []string{"questiond", "example.com"}, // the hosts these requests name
	}
	questions, err := ask.New(store, nil, announce, httpapi.AskOptions(opts))
	if err == nil {
		api, err = httpapi.New(questions, events, opts)
	}
	if err != nil {
		_ = stop()
		return nil, nil, nil, err
	}
	return api, store, stop, nil
}

// knownTemplates are the known questions as POST /elicitations stores them,
// made once: parsing their schemas for every input would halve the fuzzer's
// speed.
var knownTemplates = sync.OnceValues(func() ([]*pending.Question, error) {
	api, store, stop, err := newSurfaceServer()
	if err != nil {
		return nil, err
	}
	defer stop()
	var questions []*pending.Question
	for _, form := range knownForms {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/elicitations", strings.NewReader(form)))
		var c struct{ ID string }
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &c) != nil {
			return nil, fmt.Errorf("creating a known question: %d %s", rec.Code, rec.Body)
		}
		q, err := store.Get(context.Background(), c.ID)
		if err != nil {
			return nil, err
		}
		questions = append(questions, q)
	}
	return questions, nil
})

func newSurface(t *testing.T) *surface {
	templates, err := knownTemplates()
	if err != nil {
		t.Fatal(err)
	}
	api, store, stop, err := newSurfaceServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("shutting down: %v", err)
		}
	})
	s := &surface{api: api, store: store}
	now := time.Now().Round(time.Millisecond)
	for _, tmpl := range templates {
		q := *tmpl
		q.CreatedAt, q.Deadline = now, now.Add(time.Hour)
		if err := store.Create(context.Background(), &q); err != nil {
			t.Fatal(err)
		}
		stored, err := store.Get(context.Background(), q.ID)
		if err != nil {
			t.Fatal(err)
		}
		record, _ := json.Marshal(stored)
		s.known = append(s.known, knownQuestion{id: q.ID, directory: q.Directory, record: record})
	}
	return s
}

// exchange is one request and what came back. gone means the client hung
// up before an answer, as a fuzzed POST /elicit does when nobody answers.
type exchange struct {
	req    *http.Request
	route  string // the path the router matched on
	stream bool   // an event stream, served by a real HTTP server
	status int
	header http.Header
	body   []byte
	gone   bool
}

// FuzzHTTPSurface sends one fuzzed request (method, target, header lines,
// body) to questiond holding three known pending questions, and checks that
// the answer is a documented status with a well-formed body, and that a
// known question changed only if the request legitimately ended it. Targets
// may name the known questions' ids as {k0}, {k1} and {k2}.
func FuzzHTTPSurface(f *testing.F) {
	// The seed corpus, one input per route and outcome, is in
	// testdata/fuzz/FuzzHTTPSurface.
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte) {
		s := newSurface(t)
		for i, k := range s.known {
			target = strings.ReplaceAll(target, fmt.Sprintf("{k%d}", i), k.id)
		}
		req, ok := serverRequest(method, target, headers, body)
		if !ok {
			return // net/http answers it before any handler
		}
		ex := &exchange{req: req, route: routePath(req)}
		ex.stream = req.Method == http.MethodGet && slices.Contains([]string{"/event", "/events", "/global/event"}, ex.route)
		if ex.stream {
			s.serveStream(t, ex, rawRequest(method, target, headers, body))
		} else {
			s.serve(ex)
		}
		checkAnswer(t, ex)
		checkSuccess(t, ex)
		s.checkKnown(t, ex)
	})
}

// rawRequest is the HTTP/1.1 request a client would send. Host and
// Content-Length come last, so that no fuzzed line can continue them.
func rawRequest(method, target, headers string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	for line := range strings.SplitSeq(headers, "\n") {
		if line = strings.TrimSuffix(line, "\r"); line != "" {
			b.WriteString(line + "\r\n")
		}
	}
	fmt.Fprintf(&b, "Host: questiond\r\nContent-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

// serverRequest parses the request the way net/http's server does, and
// reports false for one the server refuses itself, before any handler.
func serverRequest(method, target, headers string, body []byte) (*http.Request, bool) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(rawRequest(method, target, headers, body))))
	if err != nil {
		return nil, false
	}
	for name, values := range req.Header {
		if !validHeaderName(name) {
			return nil, false
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				return nil, false
			}
		}
	}
	if _, ok := req.Header["Expect"]; ok {
		return nil, false // 100-continue aside, answered 417 by net/http
	}
	if req.Method == http.MethodOptions && req.RequestURI == "*" {
		return nil, false // net/http's own
	}
	req.RemoteAddr = "192.0.2.1:40000"
	return req, true
}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// routePath is the path the router matches, as chi picks it.
func routePath(req *http.Request) string {
	if req.URL.RawPath != "" {
		return req.URL.RawPath
	}
	if req.URL.Path == "" {
		return "/"
	}
	return req.URL.Path
}

// serve calls the handler directly. POST /elicit waits for an answer that
// never comes, so its caller hangs up after a moment.
func (s *surface) serve(ex *exchange) {
	ctx := context.Background()
	if ex.req.Method == http.MethodPost && ex.route == "/elicit" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Millisecond)
		defer cancel()
	}
	rec := httptest.NewRecorder()
	s.api.ServeHTTP(rec, ex.req.WithContext(ctx))
	res := rec.Result()
	ex.status, ex.header, ex.body = res.StatusCode, res.Header, rec.Body.Bytes()
	ex.gone = ctx.Err() != nil && len(ex.body) == 0
}

// serveStream sends raw to a real server, reads the answer and, for a
// stream, its first frame, and hangs up.
func (s *surface) serveStream(t *testing.T, ex *exchange, raw []byte) {
	ts := httptest.NewServer(s.api)
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(raw); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), ex.req)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", ex.req.Method, ex.req.RequestURI, err)
	}
	ex.status, ex.header = res.StatusCode, res.Header
	if res.StatusCode == http.StatusOK {
		r := bufio.NewReader(res.Body)
		line, err := r.ReadString('\n')
		blank, err2 := r.ReadString('\n')
		if err != nil || err2 != nil || blank != "\n" {
			t.Fatalf("%s %s: first frame %q%q: %v %v", ex.req.Method, ex.req.RequestURI, line, blank, err, err2)
		}
		ex.body = []byte(line + blank)
		return
	}
	ex.body, err = io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", ex.req.Method, ex.req.RequestURI, err)
	}
}

// checkAnswer checks the status, headers and body of one answer.
func checkAnswer(t *testing.T, ex *exchange) {
	t.Helper()
	if ex.gone {
		return
	}
	what := fmt.Sprintf("%s %s %q", ex.req.Method, ex.req.RequestURI, ex.req.Header)
	if ex.status == http.StatusInternalServerError || !documentedStatus[ex.status] {
		t.Fatalf("%s: status %d, body %s", what, ex.status, ex.body)
	}
	if !slices.ContainsFunc(ex.header.Values("Vary"), func(v string) bool { return strings.Contains(v, "Origin") }) {
		t.Errorf("%s: %d without Vary: Origin", what, ex.status)
	}
	contentType := ex.header.Get("Content-Type")
	switch {
	case ex.status == http.StatusNoContent:
		if len(ex.body) != 0 {
			t.Fatalf("%s: 204 with a body %q", what, ex.body)
		}
		return
	case ex.status == http.StatusUnsupportedMediaType && (ex.route == "/elicitations" || ex.route == "/elicit" || strings.HasPrefix(ex.route, "/sessions/")):
		// questiond's own routes say which header to send, in JSON.
		var named struct {
			Name string
			Data struct{ Message, Kind string }
		}
		if contentType != "application/json" || json.Unmarshal(ex.body, &named) != nil || named.Name != "UnsupportedMediaType" ||
			named.Data.Kind != "Headers" || !strings.Contains(named.Data.Message, "Content-Type: application/json") {
			t.Fatalf("%s: 415 %s %q, want questiond's JSON naming the header", what, contentType, ex.body)
		}
		return
	case ex.status == http.StatusUnsupportedMediaType:
		if want := "Unsupported content-type: " + ex.req.Header.Get("Content-Type"); contentType != "text/plain" || string(ex.body) != want {
			t.Fatalf("%s: 415 %s %q, want text/plain %q", what, contentType, ex.body, want)
		}
		return
	case ex.status == http.StatusFound:
		// GET / and /ui/ send the browser to the page.
		if loc := ex.header.Get("Location"); (ex.route != "/" && ex.route != "/ui/") || loc == "" {
			t.Fatalf("%s: 302 to %q", what, loc)
		}
		return
	case (ex.route == "/ui" || strings.HasPrefix(ex.route, "/ui/")) && ex.status == http.StatusOK:
		// The page and its files, each with the page's security headers.
		if !strings.HasPrefix(ex.header.Get("Content-Security-Policy"), "default-src 'none'") || ex.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s: /ui answer without its security headers: %q", what, ex.header)
		}
		return
	case ex.route == "/mcp" && ex.status < 300:
		// The MCP SDK's own answers: JSON-RPC messages as JSON or as an
		// event stream, 202 for a notification, 204 for a closed session.
		if ex.status == http.StatusOK && contentType != "application/json" && contentType != "text/event-stream" {
			t.Fatalf("%s: MCP 200 as %s %q", what, contentType, ex.body)
		}
		return
	case ex.route == "/mcp" && contentType == "application/json" && bytes.Contains(ex.body, []byte(`"jsonrpc"`)):
		// A JSON-RPC error the SDK answers itself (e.g. an unsupported
		// protocol version): MCP's dialect, for MCP clients.
		if !json.Valid(ex.body) {
			t.Fatalf("%s: MCP %d with invalid JSON %q", what, ex.status, ex.body)
		}
		return
	case ex.stream && ex.status == http.StatusOK:
		data, ok := strings.CutPrefix(string(ex.body), "data: ")
		var first struct {
			Type    string
			Payload struct{ Type string }
		}
		if contentType != "text/event-stream" || !ok || json.Unmarshal([]byte(data), &first) != nil ||
			(first.Type != "server.connected" && first.Payload.Type != "server.connected") {
			t.Fatalf("%s: stream %s starts with %q, want server.connected", what, contentType, ex.body)
		}
		return
	}
	if contentType != "application/json" || !json.Valid(ex.body) {
		t.Fatalf("%s: %d %s %q, want a JSON body", what, ex.status, contentType, ex.body)
	}
	var named struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
			Kind    string `json:"kind"`
		} `json:"data"`
		Tag       string `json:"_tag"`
		RequestID string `json:"requestID"`
	}
	_ = json.Unmarshal(ex.body, &named)
	var ok bool
	switch ex.status {
	case http.StatusBadRequest:
		ok = named.Name == "BadRequest" && named.Data.Message != "" && slices.Contains([]string{"Params", "Query", "Headers", "Payload"}, named.Data.Kind)
	case http.StatusNotFound:
		ok = named.Tag == "QuestionNotFoundError" && strings.HasPrefix(named.RequestID, "que") || named.Name == "NotFoundError"
	case http.StatusMethodNotAllowed:
		ok = named.Name == "MethodNotAllowed" && ex.header.Get("Allow") != ""
	case http.StatusForbidden:
		ok = named.Name == "Forbidden"
	case http.StatusRequestEntityTooLarge:
		ok = named.Name == "PayloadTooLarge"
	case http.StatusServiceUnavailable:
		ok = named.Name == "ServiceUnavailable"
	default:
		ok = true
	}
	if !ok {
		t.Fatalf("%s: %d with body %s and Allow %q, not the documented error", what, ex.status, ex.body, ex.header.Values("Allow"))
	}
}

// checkSuccess checks the bodies of the answers that change something.
func checkSuccess(t *testing.T, ex *exchange) {
	t.Helper()
	what := fmt.Sprintf("%s %s %q", ex.req.Method, ex.req.RequestURI, ex.req.Header)
	segments := strings.Split(ex.route, "/")
	var view struct{ ID, Status, Ending string }
	switch {
	case strings.HasPrefix(ex.route, "/sessions/") && (ex.status == http.StatusOK || ex.status == http.StatusCreated):
		var session struct {
			ID                 string `json:"id"`
			QuestionCapability string `json:"questionCapability"`
		}
		if json.Unmarshal(ex.body, &session) != nil || "/sessions/"+session.ID != ex.route ||
			!slices.Contains([]string{"user", "parent", "none"}, session.QuestionCapability) ||
			(ex.status == http.StatusCreated) != (ex.req.Method == http.MethodPut && ex.status == http.StatusCreated) {
			t.Fatalf("%s: %d with %s, want the session", what, ex.status, ex.body)
		}
	case ex.status == http.StatusCreated:
		_ = json.Unmarshal(ex.body, &view)
		if ex.route != "/elicitations" || !strings.HasPrefix(view.ID, "que_") || view.Status != "pending" ||
			ex.header.Get("Location") != "/elicitations/"+view.ID {
			t.Fatalf("%s: 201 with Location %q and %s", what, ex.header.Get("Location"), ex.body)
		}
	case ex.status != http.StatusOK:
	case ex.req.Method == http.MethodPost && len(segments) == 4 && segments[1] == "question" && (segments[3] == "reply" || segments[3] == "reject"):
		if string(ex.body) != "true" {
			t.Fatalf("%s: 200 with %s, want true", what, ex.body)
		}
	case ex.req.Method == http.MethodDelete && ex.route == "/mcp":
	case ex.req.Method == http.MethodDelete:
		_ = json.Unmarshal(ex.body, &view)
		if ex.route != "/elicitations/"+view.ID || view.Status != "resolved" || view.Ending != "withdrawn" {
			t.Fatalf("%s: 200 with %s, want the withdrawn elicitation", what, ex.body)
		}
	}
}

// checkKnown checks that every known question is either pending as created,
// or was ended by this very request, answered 200 on a route that ends it
// and, for an operator route, in the caller's directory scope.
func (s *surface) checkKnown(t *testing.T, ex *exchange) {
	t.Helper()
	what := fmt.Sprintf("%s %s %q → %d", ex.req.Method, ex.req.RequestURI, ex.req.Header, ex.status)
	ended := 0
	for _, k := range s.known {
		q, err := s.store.Get(context.Background(), k.id)
		if err != nil {
			t.Fatalf("%s: known question %s: %v", what, k.id, err)
		}
		ending := endingRequested(ex, k.id)
		legit := ending != "" && ex.status == http.StatusOK && (ending == pending.EndWithdrawn || inScope(ex.req, k.directory))
		outcome := q.Ended
		q.Ended = nil
		want := k.record
		if outcome != nil {
			// An ended question keeps its text but not its schema.
			var asked pending.Question
			if err := json.Unmarshal(k.record, &asked); err != nil {
				t.Fatal(err)
			}
			asked.Schema = nil
			want, _ = json.Marshal(&asked)
		}
		if record, _ := json.Marshal(q); !bytes.Equal(record, want) {
			t.Fatalf("%s: known question changed\nfrom %s\n  to %s", what, want, record)
		}
		switch {
		case outcome == nil && legit:
			t.Fatalf("%s: answered 200 but %s is still pending", what, k.id)
		case outcome == nil:
		case !legit:
			t.Fatalf("%s: known question %s ended (%s) by a request that may not end it", what, k.id, outcome.Ending)
		case outcome.Ending != ending:
			t.Fatalf("%s: known question %s ended as %s, want %s", what, k.id, outcome.Ending, ending)
		default:
			ended++
		}
	}
	if ended > 1 {
		t.Fatalf("%s: %d known questions ended by one request", what, ended)
	}
}

// endingRequested is how the request asks to end question id, or "".
func endingRequested(ex *exchange, id string) pending.Ending {
	switch {
	case ex.req.Method == http.MethodPost && ex.route == "/question/"+id+"/reply":
		return pending.EndReplied
	case ex.req.Method == http.MethodPost && ex.route == "/question/"+id+"/reject":
		return pending.EndRejected
	case ex.req.Method == http.MethodDelete && ex.route == "/elicitations/"+id:
		return pending.EndWithdrawn
	}
	return ""
}

// inScope reports whether a question of directory is visible to the
// request: the documented scoping rule, applied independently of the server.
func inScope(req *http.Request, directory string) bool {
	dir := req.URL.Query().Get("directory")
	if dir == "" {
		dir, _ = url.PathUnescape(req.Header.Get("x-opencode-directory"))
	}
	for len(dir) > 1 && strings.HasSuffix(dir, "/") {
		dir = strings.TrimSuffix(dir, "/")
	}
	return dir == "" || directory == "" || dir == directory
}
