package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/api"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testserver"
)

// Leak sources this guards: the live server's stream handlers, POST /elicit
// waiters, store timers, and the test's own stream readers.
func TestMain(m *testing.M) {
	// The document describes each event stream frame with the stream's
	// schema; this decoder lets openapi3filter check one frame at a time.
	openapi3filter.RegisterBodyDecoder("text/event-stream", decodeFrame)
	// The web page's files are checked as the strings the document says.
	for _, ct := range []string{"text/html", "text/javascript", "text/css", "image/svg+xml"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	goleak.VerifyTestMain(m)
}

// decodeFrame decodes exactly one frame as OpenCode writes it: a single
// "data: " line of JSON and a blank line, nothing else.
func decodeFrame(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	data, ok := bytes.CutPrefix(raw, []byte("data: "))
	if !ok || !bytes.HasSuffix(data, []byte("\n\n")) || bytes.Count(data, []byte("\n")) != 2 {
		return nil, fmt.Errorf("not one data-only frame: %q", raw)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("frame data: %w", err)
	}
	return v, nil
}

// liveServer is a real questiond (memory store, real event broker, the real
// handlers) serving this package's document, plus a router over that
// document to validate what goes in and out.
type liveServer struct {
	url     string
	handler *httpapi.Server
	doc     *openapi3.T
	router  routers.Router
	// The Authorization headers requests carry unless they say otherwise;
	// "" when the server has no credentials of that role.
	operatorAuth, agentAuth string

	mu      sync.Mutex
	checked map[string]bool // "operationId status" of every validated response
}

// startLive starts a server with the given credentials and limits; zero
// values leave it open and unlimited.
func startLive(t *testing.T, auth httpapi.Auth, limits httpapi.Limits) *liveServer {
	t.Helper()
	return startLiveWith(t, httpapi.Options{Auth: auth, Limits: limits})
}

// startLiveWith starts a server with opts' credentials, limits and session
// records; the test sets everything else.
func startLiveWith(t *testing.T, opts httpapi.Options) *liveServer {
	t.Helper()
	auth := opts.Auth
	server := testkit.Serve(t, testserver.Config{
		API: httpapi.Options{
			Version:      "test",
			OpenAPI:      api.JSON(),
			MaxBodyBytes: 64 << 10,
			KeepAlive:    2 * time.Millisecond,
			Auth:         auth,
			Limits:       opts.Limits,
			Sessions:     opts.Sessions,
		},
		// A short heartbeat puts server.heartbeat frames on every stream within
		// the test; a short keep-alive puts leading whitespace in POST /elicit bodies.
		Events:         sse.Options{Heartbeat: 50 * time.Millisecond},
		Logger:         zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		FailureTimeout: 5 * time.Second,
	})

	doc := loadDoc(t)
	doc.Servers = openapi3.Servers{{URL: server.URL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	l := &liveServer{url: server.URL, handler: server.API, doc: doc, router: router, checked: map[string]bool{}}
	if auth.OperatorPassword != "" {
		user := auth.OperatorUsername
		if user == "" {
			user = "opencode"
		}
		l.operatorAuth = basicAuth(user, auth.OperatorPassword)
	}
	if len(auth.AgentTokens) > 0 {
		names := slices.Sorted(maps.Keys(auth.AgentTokens))
		l.agentAuth = "Bearer " + auth.AgentTokens[names[0]] // the first agent by name asks
	}
	return l
}

// isAgentPath reports whether path is one of the agents' routes.
func isAgentPath(path string) bool {
	return strings.HasPrefix(path, "/elicit") || strings.HasPrefix(path, "/sessions/") || path == "/mcp"
}

func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// authenticate is the document's security requirements as a server with
// credentials sees them: a request meets a scheme when it carries credentials
// in that scheme's form. Whether they are the right ones is the server's to
// say (401); a request without any, or with the other role's, breaks the
// document. A server without credentials needs none: every scheme is met.
func (l *liveServer) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if l.operatorAuth == "" && l.agentAuth == "" {
		return nil
	}
	r, scheme := in.RequestValidationInput.Request, in.SecurityScheme
	authorization := r.Header.Get("Authorization")
	switch {
	case scheme.Type == "http" && scheme.Scheme == "basic":
		encoded, ok := cutPrefixFold(authorization, "Basic ")
		raw, err := base64.StdEncoding.DecodeString(encoded)
		if !ok || err != nil || !bytes.Contains(raw, []byte(":")) {
			return errors.New("no Basic credentials")
		}
	case scheme.Type == "http" && scheme.Scheme == "bearer":
		if token, ok := cutPrefixFold(authorization, "Bearer "); !ok || token == "" {
			return errors.New("no bearer token")
		}
	case scheme.Type == "apiKey" && scheme.In == "query":
		if r.URL.Query().Get(scheme.Name) == "" || authorization != "" {
			return fmt.Errorf("no %s alone", scheme.Name)
		}
	default:
		return fmt.Errorf("scheme %s %s is not known to this test", scheme.Type, scheme.Scheme)
	}
	return nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return "", false
	}
	return s[len(prefix):], true
}

// exchange is one request of the test and what the document says of it.
type exchange struct {
	method, path string
	body         string   // sent as-is; "" sends no body
	header       []string // name, value pairs; Content-Type defaults to JSON when there is a body
	// brokenRequest marks requests that break the document on purpose (a bad
	// id, an unknown enum value, a text/plain body, missing credentials):
	// ValidateRequest must refuse them, and the server's answer must still be
	// a documented error.
	brokenRequest bool
	// anonymous sends no credentials; otherwise a request without its own
	// Authorization header or auth_token gets the route's role's.
	anonymous bool
	host      string // sent as the Host header when set
}

func (x exchange) String() string { return x.method + " " + x.path }

// result is a finished exchange, not yet checked.
type result struct {
	x          exchange
	input      *openapi3filter.RequestValidationInput
	requestErr error // ValidateRequest's verdict on the request
	status     int
	header     http.Header
	body       []byte
}

func (x exchange) newRequest(ctx context.Context, base string) (*http.Request, error) {
	var body io.Reader
	if x.body != "" {
		body = strings.NewReader(x.body)
	}
	req, err := http.NewRequestWithContext(ctx, x.method, base+x.path, body)
	if err != nil {
		return nil, err
	}
	if x.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(x.header); i += 2 {
		req.Header.Set(x.header[i], x.header[i+1])
	}
	return req, nil
}

// newRequest builds x's request to this server, with the credentials of the
// route's role (an agent's on the agent routes, an operator's elsewhere)
// unless x brings its own or asks for none.
func (l *liveServer) newRequest(ctx context.Context, x exchange) (*http.Request, error) {
	req, err := x.newRequest(ctx, l.url)
	if err != nil {
		return nil, err
	}
	if x.host != "" {
		req.Host = x.host
	}
	if x.anonymous || req.Header.Get("Authorization") != "" || req.URL.Query().Has("auth_token") {
		return req, nil
	}
	credentials := l.operatorAuth
	if isAgentPath(req.URL.Path) {
		credentials = l.agentAuth
	}
	if credentials != "" {
		req.Header.Set("Authorization", credentials)
	}
	return req, nil
}

// validationInput finds req's operation and checks req against it.
func (l *liveServer) validationInput(ctx context.Context, x exchange, req *http.Request) (*openapi3filter.RequestValidationInput, error) {
	route, params, err := l.router.FindRoute(req)
	if err != nil {
		return nil, fmt.Errorf("%s: no operation in the document: %w", x, err)
	}
	return &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: l.authenticate},
	}, nil
}

// send validates the request against the document and sends it. It does not
// touch t, so goroutines may call it.
func (l *liveServer) send(ctx context.Context, x exchange) (*result, error) {
	twin, err := l.newRequest(ctx, x) // ValidateRequest reads the body
	if err != nil {
		return nil, err
	}
	input, err := l.validationInput(ctx, x, twin)
	if err != nil {
		return nil, err
	}
	r := &result{x: x, input: input, requestErr: openapi3filter.ValidateRequest(ctx, input)}

	req, err := l.newRequest(ctx, x)
	if err != nil {
		return nil, err
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if r.body, err = io.ReadAll(res.Body); err != nil {
		return nil, err
	}
	r.status, r.header = res.StatusCode, res.Header
	return r, nil
}

// noRedirects is a client that shows redirects (GET /) as they are answered.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// check asserts the status and that request and response follow the document.
func (l *liveServer) check(t *testing.T, r *result, wantStatus int) {
	t.Helper()
	x := r.x
	switch {
	case !x.brokenRequest && r.requestErr != nil:
		t.Errorf("%s: the request should follow the document: %v", x, r.requestErr)
	case x.brokenRequest && r.requestErr == nil:
		t.Errorf("%s: the request should break the document, but it passes", x)
	}
	if r.status != wantStatus {
		t.Errorf("%s: status %d, want %d; body %s", x, r.status, wantStatus, r.body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: r.input,
		Status:                 r.status,
		Header:                 r.header,
		// A HEAD answer has the headers of the GET answer the document
		// describes, never its body.
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: x.method == http.MethodHead},
	}
	in.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(t.Context(), in); err != nil {
		t.Errorf("%s → %d %s: the response breaks the document: %v", x, r.status, r.body, err)
	}
	// A response documented without a body (OpenCode's 401) must have none:
	// ValidateResponse does not look at bodies it has no schema for.
	if documented := r.input.Route.Operation.Responses.Status(r.status); documented != nil &&
		documented.Value != nil && len(documented.Value.Content) == 0 && len(r.body) > 0 {
		t.Errorf("%s → %d: body %q where the document has none", x, r.status, r.body)
	}
	l.record(r.input.Route.Operation.OperationID, r.status)
}

func (l *liveServer) record(operationID string, status int) {
	l.mu.Lock()
	l.checked[fmt.Sprintf("%s %d", operationID, status)] = true
	l.mu.Unlock()
}

func (l *liveServer) do(t *testing.T, x exchange, wantStatus int) *result {
	t.Helper()
	r, err := l.send(t.Context(), x)
	if err != nil {
		t.Fatal(err)
	}
	l.check(t, r, wantStatus)
	return r
}

// doOffDocument sends a request the document has no operation for (an
// unknown path, a wrong method) and checks the answer against the error
// schema the document names for it.
func (l *liveServer) doOffDocument(t *testing.T, x exchange, wantStatus int, schema string) {
	t.Helper()
	req, err := l.newRequest(t.Context(), x)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.router.FindRoute(req); err == nil {
		t.Fatalf("%s is in the document", x)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != wantStatus {
		t.Errorf("%s: status %d, want %d", x, res.StatusCode, wantStatus)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", x, ct)
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		t.Fatalf("%s: body %q: %v", x, body, err)
	}
	if err := l.doc.Components.Schemas[schema].Value.VisitJSON(value, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("%s → %s: not a %s: %v", x, body, schema, err)
	}
}

func (r *result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s: body %q: %v", r.x, r.body, err)
	}
}

// liveStream is an open event stream whose frames are read in the background.
type liveStream struct {
	l      *liveServer
	x      exchange
	input  *openapi3filter.RequestValidationInput
	header http.Header
	frames chan []byte // closed when the stream ends
	// validated: the first frame went through openapi3filter (status,
	// headers); every frame is checked by its compiled schema (live_frames_test.go).
	validated bool
}

// openStream sends x, a GET of a stream, with ctx, its request validated
// against the document, and fails the test unless the answer is 200. The
// caller closes the answer's body.
func (l *liveServer) openStream(t *testing.T, ctx context.Context, x exchange) (*openapi3filter.RequestValidationInput, *http.Response) {
	t.Helper()
	req, err := l.newRequest(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	input, err := l.validationInput(ctx, x, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := openapi3filter.ValidateRequest(ctx, input); err != nil {
		t.Errorf("%s: %v", x, err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		t.Fatalf("%s: status %d", x, res.StatusCode)
	}
	return input, res
}

func (l *liveServer) open(t *testing.T, path string, header ...string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	x := exchange{method: http.MethodGet, path: path, header: header}
	input, res := l.openStream(t, ctx, x)
	s := &liveStream{l: l, x: x, input: input, header: res.Header, frames: make(chan []byte, 4096)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.frames)
		defer res.Body.Close()
		reader := bufio.NewReader(res.Body)
		for {
			line, err := reader.ReadBytes('\n')
			if err != nil {
				return
			}
			blank, err := reader.ReadBytes('\n')
			if err != nil {
				return
			}
			select {
			case s.frames <- append(line, blank...):
			default: // the test stopped reading; the frame is not needed
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// next validates frames until one of eventType arrives and returns that
// frame's event (the payload, on /global/event) and the whole frame.
func (s *liveStream) next(t *testing.T, eventType string) (event, frame map[string]any) {
	t.Helper()
	timeout := time.After(5 * time.Second) // a bound for a broken server, not an ordering
	for {
		select {
		case raw, ok := <-s.frames:
			if !ok {
				t.Fatalf("%s ended before a %s frame", s.x, eventType)
			}
			if !s.validated {
				in := &openapi3filter.ResponseValidationInput{
					RequestValidationInput: s.input,
					Status:                 http.StatusOK,
					Header:                 s.header,
					Options:                &openapi3filter.Options{IncludeResponseStatus: true},
				}
				in.SetBodyBytes(raw)
				if err := openapi3filter.ValidateResponse(t.Context(), in); err != nil {
					t.Errorf("%s frame %q breaks the document: %v", s.x, raw, err)
				}
				s.validated = true
			}
			if err := checkFrame(frameSchema(t, s.input), raw); err != nil {
				t.Errorf("%s frame %q breaks the document: %v", s.x, raw, err)
			}
			s.l.record(s.input.Route.Operation.OperationID, http.StatusOK)
			if err := json.Unmarshal(bytes.TrimPrefix(raw, []byte("data: ")), &frame); err != nil {
				t.Fatalf("%s frame %q: %v", s.x, raw, err)
			}
			event = frame
			if payload, ok := frame["payload"].(map[string]any); ok {
				event = payload
			}
			if event["type"] == eventType {
				return event, frame
			}
		case <-timeout:
			t.Fatalf("%s: no %s frame within 5s", s.x, eventType)
		}
	}
}

const (
	deployMessage = `"Set up the deployment"`
	deploySchema  = `{"type":"object","properties":{` +
		`"env":{"type":"string","title":"Environment","enum":["dev","prod"]},` +
		`"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":10}},` +
		`"required":["env","replicas"]}`
	deployBody   = `{"message":` + deployMessage + `,"requestedSchema":` + deploySchema + `,"timeout":"90s"}`
	unknownID    = "que_00000000000000000000000000"
	goodAnswers  = `{"answers":[["prod"],["3"]]}`
	emptyObject  = `{}`
	acceptedJSON = `{"env":"prod","replicas":3}`
)

// TestLiveResponsesFollowTheDocument runs a real server through every route,
// success and error cases, and validates every request it sends and every
// response and event frame it gets against the document.
func TestLiveResponsesFollowTheDocument(t *testing.T) {
	l := startLive(t, httpapi.Auth{}, httpapi.Limits{})
	events := l.open(t, "/event")
	global := l.open(t, "/global/event")
	events.next(t, "server.connected")
	global.next(t, "server.connected")
	alias := l.open(t, "/events")
	alias.next(t, "server.connected")

	// Health, doc, routes that are not in the document.
	var health struct {
		Healthy bool
		Version string
	}
	l.do(t, exchange{method: "GET", path: "/global/health"}, 200).decode(t, &health)
	if !health.Healthy || health.Version != "test" {
		t.Errorf("health = %+v", health)
	}
	if head := l.do(t, exchange{method: "HEAD", path: "/global/health"}, 200); len(head.body) != 0 {
		t.Errorf("HEAD /global/health: body %q", head.body)
	}
	for _, method := range []string{"GET", "HEAD"} {
		if r := l.do(t, exchange{method: method, path: "/readyz"}, 200); r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s /readyz: Cache-Control %q", method, r.header.Get("Cache-Control"))
		}
	}
	if doc := l.do(t, exchange{method: "GET", path: "/doc"}, 200); !bytes.Equal(doc.body, api.JSON()) {
		t.Error("GET /doc does not serve api.JSON()")
	}
	l.doOffDocument(t, exchange{method: "GET", path: "/foo"}, 404, "NotFoundError")

	// The web page: a redirect to it, the page and its files, a name it has not.
	if r := l.do(t, exchange{method: "GET", path: "/"}, 302); r.header.Get("Location") != "ui" {
		t.Errorf("GET / redirects to %q", r.header.Get("Location"))
	}
	for _, path := range []string{"/ui", "/ui/app.js", "/ui/app.css", "/ui/icon.svg"} {
		if r := l.do(t, exchange{method: "GET", path: path}, 200); !strings.Contains(r.header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, r.header.Get("Content-Security-Policy"))
		}
	}
	l.do(t, exchange{method: "GET", path: "/ui/nope.js"}, 404)
	l.doOffDocument(t, exchange{method: "PUT", path: "/question"}, 405, "MethodNotAllowedError")

	// An empty list, then two pending elicitations (plain and enveloped).
	var list []map[string]any
	l.do(t, exchange{method: "GET", path: "/question"}, 200).decode(t, &list)
	if len(list) != 0 {
		t.Fatalf("list = %v, want []", list)
	}
	inProject := strings.Replace(deployBody, `{"message"`, `{"directory":"/p","message"`, 1)
	created := l.do(t, exchange{method: "POST", path: "/elicitations", body: inProject}, 201)
	var first struct{ ID, Status string }
	created.decode(t, &first)
	if loc := created.header.Get("Location"); loc != "/elicitations/"+first.ID || first.Status != "pending" {
		t.Errorf("created %s with Location %q", created.body, loc)
	}
	asked, _ := events.next(t, "question.asked")
	if id := asked["properties"].(map[string]any)["id"]; id != first.ID {
		t.Errorf("question.asked for %v, want %s", id, first.ID)
	}
	_, wrapped := global.next(t, "question.asked")
	if wrapped["directory"] != "/p" || wrapped["project"] != "global" {
		t.Errorf("global frame %v: want directory /p, project global", wrapped)
	}
	var second struct{ ID string }
	l.do(t, exchange{method: "POST", path: "/elicitations",
		body: `{"method":"elicitation/create","params":` + deployBody + `}`}, 201).decode(t, &second)
	events.next(t, "question.asked")
	l.do(t, exchange{method: "GET", path: "/question"}, 200).decode(t, &list)
	if len(list) != 2 {
		t.Errorf("list has %d questions, want 2", len(list))
	}
	l.do(t, exchange{method: "GET", path: "/question?directory=/elsewhere"}, 200).decode(t, &list)
	if len(list) != 1 || list[0]["id"] != second.ID {
		t.Errorf("list for another directory: %v, want only %s", list, second.ID)
	}
	l.do(t, exchange{method: "GET", path: "/question", header: []string{"x-opencode-directory", "%2Fp"}}, 200).decode(t, &list)
	if len(list) != 2 {
		t.Errorf("list for /p has %d questions, want 2", len(list))
	}
	// The expected form of the answers: scoped and 404'd like the list.
	var form struct {
		ID, Directory, Message string
		Fields                 []struct {
			Key, Kind        string
			Required         bool
			Minimum, Maximum *float64
			Options          []struct{ Value, Label string }
		}
	}
	l.do(t, exchange{method: "GET", path: "/questiond/question/" + first.ID + "/form"}, 200).decode(t, &form)
	if form.ID != first.ID || form.Directory != "/p" || form.Message != "Set up the deployment" || len(form.Fields) != 2 ||
		form.Fields[0].Kind != "single" || len(form.Fields[0].Options) != 2 || form.Fields[0].Options[1].Value != "prod" ||
		form.Fields[1].Kind != "integer" || !form.Fields[1].Required || form.Fields[1].Maximum == nil || *form.Fields[1].Maximum != 10 {
		t.Errorf("form = %+v", form)
	}
	l.do(t, exchange{method: "GET", path: "/questiond/question/" + first.ID + "/form?directory=/elsewhere"}, 404)
	l.do(t, exchange{method: "GET", path: "/questiond/question/" + unknownID + "/form"}, 404)
	l.do(t, exchange{method: "GET", path: "/questiond/question/abc/form", brokenRequest: true}, 400)
	replayed := l.open(t, "/event")
	replayed.next(t, "server.connected")
	replayed.next(t, "question.asked")

	// Creations the server refuses.
	badSchema := strings.Replace(deployBody, `"maximum":10`, `"maximum":0`, 1)
	l.do(t, exchange{method: "POST", path: "/elicitations", body: badSchema}, 400)
	l.do(t, exchange{method: "POST", path: "/elicitations", body: strings.Replace(deployBody, `{"message"`, `{"mode":"url","message"`, 1), brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: "/elicitations", body: `{"requestedSchema":{"type":"object","properties":{}}}`, brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody, header: []string{"Content-Type", "text/plain"}, brokenRequest: true}, 415)

	// Reading an elicitation: pending, a wait that runs out, unknown, bad id, bad wait.
	var got struct{ Status string }
	l.do(t, exchange{method: "GET", path: "/elicitations/" + first.ID}, 200).decode(t, &got)
	if got.Status != "pending" {
		t.Errorf("status %q, want pending", got.Status)
	}
	l.do(t, exchange{method: "GET", path: "/elicitations/" + first.ID + "?wait=20ms"}, 200).decode(t, &got)
	if got.Status != "pending" {
		t.Errorf("after a wait that ran out: status %q, want pending", got.Status)
	}
	l.do(t, exchange{method: "GET", path: "/elicitations/" + unknownID}, 404)
	l.do(t, exchange{method: "GET", path: "/elicitations/abc", brokenRequest: true}, 400)
	l.do(t, exchange{method: "GET", path: "/elicitations/" + first.ID + "?wait=soon", brokenRequest: true}, 400)

	// Replies: every refusal first (the question stays pending), then one that works.
	reply := "/question/" + first.ID + "/reply"
	l.do(t, exchange{method: "POST", path: "/question/abc/reply", body: goodAnswers, brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: reply, body: emptyObject, brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: reply, body: `{"answers":["prod"]}`, brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: reply, body: `{not json`, brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: reply, body: `{"answers":[["prod"],["abc"]]}`}, 400)
	l.do(t, exchange{method: "POST", path: reply, body: goodAnswers, header: []string{"Content-Type", "text/plain"}, brokenRequest: true}, 415)
	l.do(t, exchange{method: "POST", path: reply, body: `{"answers":[["` + strings.Repeat("x", 70<<10) + `"]]}`}, 413)
	l.do(t, exchange{method: "POST", path: reply, body: goodAnswers, header: []string{"Origin", "http://evil.example"}}, 403)
	l.do(t, exchange{method: "POST", path: "/question/" + unknownID + "/reply", body: goodAnswers}, 404)
	l.do(t, exchange{method: "POST", path: reply, body: goodAnswers}, 200)
	replied, _ := events.next(t, "question.replied")
	global.next(t, "question.replied")
	if answers, _ := json.Marshal(replied["properties"].(map[string]any)["answers"]); string(answers) != `[["prod"],["3"]]` {
		t.Errorf("question.replied answers %s", answers)
	}
	l.do(t, exchange{method: "POST", path: reply, body: goodAnswers}, 404)
	var resolved struct {
		Status, Ending string
		Result         struct {
			Action  string
			Content json.RawMessage
		}
	}
	l.do(t, exchange{method: "GET", path: "/elicitations/" + first.ID}, 200).decode(t, &resolved)
	if resolved.Status != "resolved" || resolved.Ending != "replied" || resolved.Result.Action != "accept" || string(resolved.Result.Content) != acceptedJSON {
		t.Errorf("after the reply: %+v", resolved)
	}

	// A long-poll that a reject ends, and the reject's refusals.
	polled := make(chan *result, 1)
	go func() {
		r, err := l.send(context.Background(), exchange{method: "GET", path: "/elicitations/" + second.ID + "?wait=10s"})
		if err != nil {
			t.Error(err)
		}
		polled <- r
	}()
	reject := "/question/" + second.ID + "/reject"
	l.do(t, exchange{method: "POST", path: "/question/abc/reject", brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: reject, body: `{"action":"later"}`, brokenRequest: true}, 400)
	l.do(t, exchange{method: "POST", path: "/question/" + unknownID + "/reject"}, 404)
	l.do(t, exchange{method: "POST", path: reject, header: []string{"Origin", "http://evil.example"}}, 403)
	l.do(t, exchange{method: "POST", path: reject, body: `{"action":"decline"}`}, 200)
	events.next(t, "question.rejected")
	global.next(t, "question.rejected")
	if r := <-polled; r != nil {
		l.check(t, r, 200)
		var ended struct {
			Status, Ending string
			Result         struct{ Action string }
		}
		r.decode(t, &ended)
		if ended.Status != "resolved" || ended.Ending != "rejected" || ended.Result.Action != "decline" {
			t.Errorf("long-poll ended with %s", r.body)
		}
	}
	l.do(t, exchange{method: "POST", path: reject}, 404)

	// Withdrawing.
	var third struct{ ID string }
	l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody}, 201).decode(t, &third)
	events.next(t, "question.asked")
	l.do(t, exchange{method: "DELETE", path: "/elicitations/" + third.ID, header: []string{"Origin", "http://evil.example"}}, 403)
	var withdrawn struct{ Status, Ending string }
	l.do(t, exchange{method: "DELETE", path: "/elicitations/" + third.ID}, 200).decode(t, &withdrawn)
	if withdrawn.Status != "resolved" || withdrawn.Ending != "withdrawn" {
		t.Errorf("withdrawn: %+v", withdrawn)
	}
	events.next(t, "question.rejected")
	l.do(t, exchange{method: "DELETE", path: "/elicitations/" + third.ID}, 404)
	l.do(t, exchange{method: "DELETE", path: "/elicitations/abc", brokenRequest: true}, 400)

	// POST /elicit, plain: the operator answers while the call waits.
	elicited := l.elicitAndAnswer(t, events, deployBody, "reply", goodAnswers)
	if string(elicited.body) == "" || elicited.header.Get("X-Questiond-Request-Id") == "" {
		t.Errorf("POST /elicit: %q without a request id header", elicited.body)
	}
	var result struct {
		Action  string
		Content json.RawMessage
	}
	elicited.decode(t, &result)
	if result.Action != "accept" || string(result.Content) != acceptedJSON {
		t.Errorf("POST /elicit: %s", elicited.body)
	}

	// POST /elicit, JSON-RPC: the operator rejects; then invalid params.
	rpc := l.elicitAndAnswer(t, events, `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":`+deployBody+`}`, "reject", "")
	if got := string(bytes.TrimSpace(rpc.body)); got != `{"jsonrpc":"2.0","id":7,"result":{"action":"cancel"}}` {
		t.Errorf("JSON-RPC elicit: %s", got)
	}
	var rpcErr struct {
		ID    int
		Error struct{ Code int }
	}
	l.do(t, exchange{method: "POST", path: "/elicit",
		body: `{"jsonrpc":"2.0","id":8,"method":"elicitation/create","params":` + badSchema + `}`}, 200).decode(t, &rpcErr)
	if rpcErr.ID != 8 || rpcErr.Error.Code != -32602 {
		t.Errorf("JSON-RPC invalid params: %+v", rpcErr)
	}
	l.do(t, exchange{method: "POST", path: "/elicit", body: badSchema}, 400)
	l.do(t, exchange{method: "POST", path: "/elicit", body: deployBody, header: []string{"Content-Type", "text/plain"}, brokenRequest: true}, 415)

	// Session capabilities, the operator console, and asking through /mcp.
	exerciseSessions(t, l, events)
	exerciseConsole(t, l, events)
	exerciseMCP(t, l, events)
	resetSessions(t, l)

	events.next(t, "server.heartbeat")
	global.next(t, "server.heartbeat")

	// Draining: no new questions, no new streams, no MCP traffic.
	l.handler.Questions().Drain()
	l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody}, 503)
	l.do(t, exchange{method: "POST", path: "/elicit", body: deployBody}, 503)
	l.do(t, exchange{method: "GET", path: "/event"}, 503)
	l.do(t, exchange{method: "GET", path: "/global/event"}, 503)
	l.do(t, exchange{method: "POST", path: "/mcp", body: mcpInitialize, header: mcpAccept}, 503)
	l.do(t, exchange{method: "GET", path: "/mcp", header: []string{"Accept", "text/event-stream", "Mcp-Session-Id", "mcp-unknown"}}, 503)
	l.do(t, exchange{method: "DELETE", path: "/mcp", header: []string{"Mcp-Session-Id", "mcp-unknown"}}, 503)
	l.do(t, exchange{method: "GET", path: "/readyz"}, 503)
	if r := l.do(t, exchange{method: "HEAD", path: "/readyz"}, 503); len(r.body) != 0 {
		t.Errorf("HEAD /readyz: body %q", r.body)
	}

	l.assertCovered(t, []string{
		"ready.get 200", "ready.get 503", "ready.head 200", "ready.head 503",
		"doc.get 200",
		"elicitation.create 201", "elicitation.create 400", "elicitation.create 415", "elicitation.create 503",
		"elicitation.elicit 200", "elicitation.elicit 400", "elicitation.elicit 415", "elicitation.elicit 503",
		"elicitation.get 200", "elicitation.get 400", "elicitation.get 404",
		"elicitation.withdraw 200", "elicitation.withdraw 400", "elicitation.withdraw 403", "elicitation.withdraw 404",
		"event.subscribe 200", "event.subscribe 503", "event.subscribeAlias 200",
		"global.event 200", "global.event 503", "global.health 200",
		"question.list 200",
		"question.reject 200", "question.reject 400", "question.reject 403", "question.reject 404",
		"question.reply 200", "question.reply 400", "question.reply 403", "question.reply 404", "question.reply 413", "question.reply 415",
		"elicitation.create 403", "elicitation.elicit 403",
		"elicitation.sessionSet 200", "elicitation.sessionSet 201", "elicitation.sessionSet 400", "elicitation.sessionSet 403",
		"elicitation.sessionSet 413", "elicitation.sessionSet 415",
		"elicitation.sessionGet 200", "elicitation.sessionGet 400",
		"elicitation.sessionReset 200", "elicitation.sessionReset 400", "elicitation.sessionReset 403", "elicitation.sessionReset 404",
		"elicitation.mcpPost 200", "elicitation.mcpPost 202", "elicitation.mcpPost 400", "elicitation.mcpPost 403", "elicitation.mcpPost 404",
		"elicitation.mcpPost 413", "elicitation.mcpPost 415", "elicitation.mcpPost 503",
		"elicitation.mcpStream 200", "elicitation.mcpStream 400", "elicitation.mcpStream 404", "elicitation.mcpStream 503",
		"elicitation.mcpEnd 204", "elicitation.mcpEnd 400", "elicitation.mcpEnd 404", "elicitation.mcpEnd 503",
		"config.get 200", "config.providers 200", "provider.list 200", "app.agents 200",
		"session.list 200", "session.list 400", "session.status 200", "session.get 200", "session.get 404",
		"session.messages 200", "session.messages 400", "session.messages 404", "session.create 400", "session.prompt 400",
	})
}

// elicitAndAnswer calls POST /elicit and, once its question is announced,
// answers it as an operator ("reply" with body, or "reject").
func (l *liveServer) elicitAndAnswer(t *testing.T, events *liveStream, body, how, answer string) *result {
	t.Helper()
	type sent struct {
		r   *result
		err error
	}
	done := make(chan sent, 1)
	go func() {
		r, err := l.send(context.Background(), exchange{method: "POST", path: "/elicit", body: body})
		done <- sent{r, err}
	}()
	asked, _ := events.next(t, "question.asked")
	id := asked["properties"].(map[string]any)["id"].(string)
	l.do(t, exchange{method: "POST", path: "/question/" + id + "/" + how, body: answer}, 200)
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	l.check(t, got.r, 200)
	if h := got.r.header.Get("X-Questiond-Request-Id"); h != "" && h != id {
		t.Errorf("X-Questiond-Request-Id %q, want %q", h, id)
	}
	return got.r
}

// assertCovered checks that the listed cases were validated and that every
// operation in the document got at least one validated success (2xx).
func (l *liveServer) assertCovered(t *testing.T, want []string) {
	t.Helper()
	l.assertValidated(t, want)
	l.mu.Lock()
	defer l.mu.Unlock()
	var missing []string
	for _, item := range l.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ok := slices.ContainsFunc([]string{"200", "201", "202", "204", "302"}, func(s string) bool { return l.checked[op.OperationID+" "+s] })
			if refusedOperations[op.OperationID] {
				ok = l.checked[op.OperationID+" 400"]
			}
			if !ok {
				missing = append(missing, op.OperationID)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("operations without a validated success: %v", missing)
	}
}

func TestLiveDecodeFrameIsStrict(t *testing.T) {
	for _, frame := range []string{
		"data: {}\n\n",
		"data: {\"a\":1}\n\n",
	} {
		if _, err := decodeFrame(strings.NewReader(frame), nil, nil, nil); err != nil {
			t.Errorf("%q: %v", frame, err)
		}
	}
	for _, frame := range []string{
		"data: {}\n",
		"event: x\ndata: {}\n\n",
		"data: {}\n\ndata: {}\n\n",
		"data: {\n\n",
		"id: 1\n\n",
	} {
		if _, err := decodeFrame(strings.NewReader(frame), nil, nil, nil); err == nil {
			t.Errorf("%q was accepted", frame)
		}
	}
}

// everyRoute is one request to each operation of the document, in the
// document's order; id names an elicitation for the routes that take one.
func everyRoute(id string) []exchange {
	return []exchange{
		{method: "GET", path: "/question"},
		{method: "GET", path: "/questiond/question/" + id + "/form"},
		{method: "GET", path: "/"},
		{method: "GET", path: "/ui"},
		{method: "GET", path: "/ui/app.js"},
		{method: "POST", path: "/question/" + id + "/reply", body: goodAnswers},
		{method: "POST", path: "/question/" + id + "/reject"},
		{method: "GET", path: "/event"},
		{method: "GET", path: "/events"},
		{method: "GET", path: "/global/event"},
		{method: "GET", path: "/global/health"},
		{method: "HEAD", path: "/global/health"},
		{method: "GET", path: "/doc"},
		{method: "GET", path: "/config"},
		{method: "GET", path: "/config/providers"},
		{method: "GET", path: "/provider"},
		{method: "GET", path: "/agent"},
		{method: "GET", path: "/session"},
		{method: "POST", path: "/session", body: promptBody},
		{method: "GET", path: "/session/status"},
		{method: "GET", path: "/session/ses_every"},
		{method: "GET", path: "/session/ses_every/message"},
		{method: "POST", path: "/session/ses_every/message", body: promptBody},
		{method: "POST", path: "/elicitations", body: deployBody},
		{method: "GET", path: "/elicitations/" + id},
		{method: "DELETE", path: "/elicitations/" + id},
		{method: "POST", path: "/elicit", body: deployBody},
		{method: "PUT", path: "/sessions/ses_every", body: `{"questionCapability":"user"}`},
		{method: "GET", path: "/sessions/ses_every"},
		{method: "DELETE", path: "/sessions/ses_every"},
		{method: "POST", path: "/mcp", body: mcpInitialize, header: mcpAccept},
		{method: "GET", path: "/mcp", header: []string{"Accept", "text/event-stream", "Mcp-Session-Id", "mcp-unknown"}},
		{method: "DELETE", path: "/mcp", header: []string{"Mcp-Session-Id", "mcp-unknown"}},
	}
}

// operationIDs are the operationIds of every operation in the document.
func (l *liveServer) operationIDs() []string {
	var ids []string
	for _, item := range l.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, op.OperationID)
		}
	}
	sort.Strings(ids)
	return ids
}

// withAuthToken adds ?auth_token= with the base64 of user:password.
func withAuthToken(path, user, password string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "auth_token=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
}

// TestLiveAccessControlFollowsTheDocument runs a server with operator and
// agent credentials through every route: without credentials (401), with
// wrong ones (401), with the other role's (403), with a Host it does not serve
// (421), and with the right ones in every documented form, validating each
// request and answer against the document.
func TestLiveAccessControlFollowsTheDocument(t *testing.T) {
	const user, password = "ops", "correct horse:battery staple" // Basic allows ':' in passwords
	tokens := map[string]string{"agent-a": "agent-a-token-0123456789", "agent-b": "agent-b-token-9876543210"}
	l := startLive(t, httpapi.Auth{OperatorUsername: user, OperatorPassword: password, AgentTokens: tokens}, httpapi.Limits{})
	asOperator := []string{"Authorization", basicAuth(user, password)}
	asAgentA := []string{"Authorization", "Bearer " + tokens["agent-a"]}
	asAgentB := []string{"Authorization", "Bearer " + tokens["agent-b"]}

	// Streams with each operator credential form: auth_token, as EventSource
	// clients send it, and Basic (the default).
	events := l.open(t, withAuthToken("/event", user, password))
	events.next(t, "server.connected")
	global := l.open(t, "/global/event")
	global.next(t, "server.connected")
	alias := l.open(t, "/events")
	alias.next(t, "server.connected")

	var asked struct{ ID string }
	l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody}, 201).decode(t, &asked)
	events.next(t, "question.asked")

	for _, route := range everyRoute(asked.ID) {
		agentRoute := isAgentPath(route.path)
		eitherRole := route.path == "/global/health" || route.path == "/doc"

		anonymous := route
		anonymous.anonymous, anonymous.brokenRequest = true, true
		if route.path == "/global/health" { // probes carry no credentials
			anonymous.brokenRequest = false
			if r := l.do(t, anonymous, 200); route.method == "GET" && string(r.body) != `{"healthy":true}` {
				t.Errorf("health without credentials: %s, want only {\"healthy\":true}", r.body)
			}
		} else {
			l.do(t, anonymous, 401)
		}

		wrong := route
		wrong.header = withHeader(route.header, "Authorization", basicAuth(user, password+"x"))
		if agentRoute {
			wrong.header = withHeader(route.header, "Authorization", "Bearer not-the-token-of-any-agent")
		}
		l.do(t, wrong, 401)
		if !agentRoute {
			wrongToken := route
			wrongToken.path = withAuthToken(route.path, user, "not the password")
			l.do(t, wrongToken, 401)
			// The password is right, the user is OpenCode's default, not the configured one.
			defaultUser := route
			defaultUser.header = withHeader(route.header, "Authorization", basicAuth("opencode", password))
			l.do(t, defaultUser, 401)
		}

		// Operators may use the session routes too (any session).
		operatorsToo := strings.HasPrefix(route.path, "/sessions/")
		if !eitherRole && !operatorsToo {
			otherRole := route
			otherRole.header, otherRole.brokenRequest = withHeader(route.header, asAgentA...), true
			if agentRoute {
				otherRole.header = withHeader(route.header, asOperator...)
				// Operators may GET /mcp for OpenCode's MCP status, but not a session's stream.
				otherRole.brokenRequest = !(route.method == "GET" && route.path == "/mcp")
			}
			l.do(t, otherRole, 403)
		}

		misdirected := route // the right credentials, sent to a name this server is not
		misdirected.host = "attacker.example"
		l.do(t, misdirected, 421)
		misdirected.host = "attacker.example:" + strings.Split(l.url, ":")[2]
		l.do(t, misdirected, 421)
	}

	// Nothing refused changed anything: the question is still pending.
	var pendingList []struct{ ID string }
	l.do(t, exchange{method: "GET", path: "/question"}, 200).decode(t, &pendingList)
	if len(pendingList) != 1 || pendingList[0].ID != asked.ID {
		t.Fatalf("after the refusals the list is %+v, want only %s", pendingList, asked.ID)
	}

	// Every credential form on the routes that take it.
	l.do(t, exchange{method: "GET", path: withAuthToken("/question", user, password)}, 200)
	for _, who := range [][]string{asOperator, asAgentA, asAgentB} {
		l.do(t, exchange{method: "GET", path: "/global/health", header: who}, 200)
		l.do(t, exchange{method: "GET", path: "/doc", header: who}, 200)
	}
	l.do(t, exchange{method: "GET", path: withAuthToken("/global/health", user, password)}, 200)

	// Agents see their own elicitations only: another agent's is unknown.
	l.do(t, exchange{method: "GET", path: "/elicitations/" + asked.ID, header: asAgentB}, 404)
	l.do(t, exchange{method: "DELETE", path: "/elicitations/" + asked.ID, header: asAgentB}, 404)
	l.do(t, exchange{method: "GET", path: "/elicitations/" + asked.ID, header: asAgentA}, 200)

	// The right credentials work on every route.
	l.do(t, exchange{method: "GET", path: withAuthToken("/questiond/question/"+asked.ID+"/form", user, password)}, 200)
	l.do(t, exchange{method: "GET", path: "/"}, 302)
	l.do(t, exchange{method: "GET", path: "/ui"}, 200)
	l.do(t, exchange{method: "GET", path: "/ui/render.js"}, 200)
	l.do(t, exchange{method: "POST", path: "/question/" + asked.ID + "/reply", body: goodAnswers}, 200)
	events.next(t, "question.replied")
	var ended struct{ Status, Ending string }
	l.do(t, exchange{method: "GET", path: "/elicitations/" + asked.ID}, 200).decode(t, &ended)
	if ended.Status != "resolved" || ended.Ending != "replied" {
		t.Errorf("after the reply: %+v", ended)
	}
	var second struct{ ID string }
	l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody}, 201).decode(t, &second)
	events.next(t, "question.asked")
	l.do(t, exchange{method: "POST", path: withAuthToken("/question/"+second.ID+"/reject", user, password)}, 200)
	events.next(t, "question.rejected")
	var third struct{ ID string }
	l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody}, 201).decode(t, &third)
	events.next(t, "question.asked")
	l.do(t, exchange{method: "DELETE", path: "/elicitations/" + third.ID}, 200)
	events.next(t, "question.rejected")
	l.elicitAndAnswer(t, events, deployBody, "reply", goodAnswers)
	exerciseAgentsApart(t, l, asAgentA, asAgentB)
	exerciseConsole(t, l, events)

	// Readiness answers anyone and ignores credentials, even wrong ones; only
	// the Host guard applies.
	for _, method := range []string{"GET", "HEAD"} {
		l.do(t, exchange{method: method, path: "/readyz", anonymous: true}, 200)
		l.do(t, exchange{method: method, path: "/readyz", header: []string{"Authorization", basicAuth(user, "not the password")}}, 200)
		l.do(t, exchange{method: method, path: "/readyz", anonymous: true, host: "attacker.example"}, 421)
	}

	var want []string
	for _, id := range l.operationIDs() {
		if strings.HasPrefix(id, "ready.") {
			want = append(want, id+" 200", id+" 421")
			continue
		}
		want = append(want, id+" 401", id+" 421")
		if id != "global.health" && id != "global.healthHead" && id != "doc.get" && id != "elicitation.sessionGet" {
			want = append(want, id+" 403")
		}
	}
	want = append(want, "elicitation.get 404", "elicitation.withdraw 404",
		"elicitation.sessionSet 201", "elicitation.sessionGet 200", "elicitation.sessionReset 200",
		"elicitation.mcpPost 200", "elicitation.mcpStream 200", "elicitation.mcpEnd 204")
	l.assertCovered(t, want)
}

// TestLiveLimitsFollowTheDocument trips each limit and validates the refusals:
// the request rate (429 with Retry-After) on every route, the number of event
// streams (503), and the number of pending questions (429).
func TestLiveLimitsFollowTheDocument(t *testing.T) {
	t.Run("request rate", func(t *testing.T) {
		// The limiter's minute starts with the server, so the test ends inside it.
		l := startLive(t, httpapi.Auth{}, httpapi.Limits{RequestsPerMinute: 1})
		// Without credentials each kind of route has its address's own
		// budget: use up the other routes', the operators' and the agents'.
		l.do(t, exchange{method: "GET", path: "/doc"}, 200)
		l.do(t, exchange{method: "GET", path: "/question"}, 200)
		l.do(t, exchange{method: "GET", path: "/elicitations/" + unknownID}, 404)
		for _, x := range everyRoute(unknownID) {
			if x.path == "/global/health" { // probes (no credentials) are not limited
				l.do(t, x, 200)
				continue
			}
			r := l.do(t, x, 429)
			if retry := r.header.Get("Retry-After"); retry != "60" {
				t.Errorf("%s: Retry-After %q, want 60 (the limiter's window)", x, retry)
			}
		}
		var want []string
		for _, id := range l.operationIDs() {
			if id != "global.health" && id != "global.healthHead" && !strings.HasPrefix(id, "ready.") { // see TestHealthIsNotRateLimited; probes are not limited
				want = append(want, id+" 429")
			}
		}
		l.assertValidated(t, want)
		l.do(t, exchange{method: "GET", path: "/readyz"}, 200)
		l.do(t, exchange{method: "HEAD", path: "/readyz"}, 200)
	})

	t.Run("event streams and pending questions", func(t *testing.T) {
		l := startLive(t, httpapi.Auth{}, httpapi.Limits{MaxStreams: 1, MaxMCPStreams: 1, MaxPending: 1})
		events := l.open(t, "/event")
		events.next(t, "server.connected")
		for _, path := range []string{"/event", "/events", "/global/event"} {
			l.do(t, exchange{method: "GET", path: path}, 503)
		}
		// Agents' MCP streams have a budget of their own.
		l.open(t, "/mcp", l.mcpBegin(t, "/mcp").header("Accept", "text/event-stream")...)
		l.do(t, exchange{method: "GET", path: "/mcp", header: []string{"Accept", "text/event-stream", "Mcp-Session-Id", "mcp-unknown"}}, 503)
		var asked struct{ ID string }
		l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody}, 201).decode(t, &asked)
		events.next(t, "question.asked")
		for _, path := range []string{"/elicitations", "/elicit"} {
			if r := l.do(t, exchange{method: "POST", path: path, body: deployBody}, 429); r.header.Get("Retry-After") != "" {
				t.Errorf("POST %s: Retry-After %q for a limit that only an answer lifts", path, r.header.Get("Retry-After"))
			}
		}
		var list []struct{ ID string }
		l.do(t, exchange{method: "GET", path: "/question"}, 200).decode(t, &list)
		if len(list) != 1 || list[0].ID != asked.ID {
			t.Errorf("after the refusals the list is %+v, want only %s", list, asked.ID)
		}
		l.assertValidated(t, []string{
			"event.subscribe 503", "event.subscribeAlias 503", "global.event 503", "elicitation.mcpStream 503",
			"elicitation.create 429", "elicitation.elicit 429",
		})
	})
}

// assertValidated checks that the listed cases ("operationId status") were validated.
func (l *liveServer) assertValidated(t *testing.T, want []string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range want {
		if !l.checked[c] {
			t.Errorf("not validated: %s", c)
		}
	}
}
