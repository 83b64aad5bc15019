package httpapi_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/httpapi"
)

// Secrets of the access-control tests. They are long and unlike anything
// else a log line holds, so finding one in the log is a leak, not chance.
// The wrong ones are secrets too: a mistyped password is often a real one.
const (
	operatorPassword = "op-pass-7Hq2vX9pLm4wK1"
	alphaToken       = "alpha-token-Qz81nB6tKe0r"
	betaToken        = "beta-token-Wc55yJ3dFa7uN"
	wrongPassword    = "wrong-pass-Zt6cR2bV8sEe"
	unknownToken     = "unknown-token-Yp3sM9gH4jLq"
)

func authBoth() httpapi.Auth {
	return httpapi.Auth{OperatorPassword: operatorPassword, AgentTokens: map[string]string{"alpha": alphaToken, "beta": betaToken}}
}

func authOperatorOnly() httpapi.Auth { return httpapi.Auth{OperatorPassword: operatorPassword} }

func authAgentsOnly() httpapi.Auth {
	return httpapi.Auth{AgentTokens: map[string]string{"alpha": alphaToken, "beta": betaToken}}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func basicAuth(user, pass string) string { return "Basic " + b64(user+":"+pass) }

func bearerAuth(token string) string { return "Bearer " + token }

// newObservedHarness is newHarness with every log entry, debug included,
// also kept for inspection. When the test ends, after the server has shut
// down, it fails the test if any entry holds one of the auth's secrets or of
// the wrong credentials above.
func newObservedHarness(t *testing.T, opts httpapi.Options) *harness {
	t.Helper()
	observed, logs := observer.New(zapcore.DebugLevel)
	secrets := secretsOf(opts.Auth)
	// Registered first, so it runs last: after the shutdown's own log lines.
	t.Cleanup(func() {
		for _, leak := range leakedSecrets(logs.All(), secrets) {
			t.Errorf("a secret was logged: %s", leak)
		}
	})
	t.Cleanup(func() {
		if logs.Len() == 0 {
			t.Error("nothing was logged: the log observer is not wired, so the secrets check proves nothing")
		}
	})
	if opts.OpenAPI == nil {
		opts.OpenAPI = []byte(`{"openapi":"3.1.0","info":{"title":"questiond","version":"test"}}`)
	}
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), observed))
	return newHarnessWith(t, tuning{api: opts}, log)
}

// secretsOf lists every string that must never reach the log: configured
// secrets, their encodings on the wire, and the wrong credentials the tests send.
func secretsOf(a httpapi.Auth) []string {
	user := a.OperatorUsername
	if user == "" {
		user = "opencode"
	}
	secrets := []string{wrongPassword, unknownToken, b64("opencode:" + wrongPassword), b64(user + ":" + wrongPassword)}
	if a.OperatorPassword != "" {
		secrets = append(secrets, a.OperatorPassword, b64(user+":"+a.OperatorPassword), b64("admin:"+a.OperatorPassword))
	}
	for _, token := range a.AgentTokens {
		secrets = append(secrets, token, b64("alpha:"+token))
	}
	slices.Sort(secrets)
	return slices.Compact(secrets)
}

// leakedSecrets describes each log entry that holds a secret, in any of its
// parts: message, logger name, fields (also as encoded), stack.
func leakedSecrets(entries []observer.LoggedEntry, secrets []string) []string {
	enc := zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig())
	var leaks []string
	for _, e := range entries {
		buf, err := enc.EncodeEntry(e.Entry, e.Context)
		encoded := ""
		if err == nil {
			encoded = buf.String()
			buf.Free()
		}
		text := strings.Join([]string{e.Message, e.LoggerName, e.Stack, fmt.Sprint(e.ContextMap()), encoded}, "\n")
		for _, s := range secrets {
			if strings.Contains(text, s) {
				leaks = append(leaks, fmt.Sprintf("%q in %s %q %v", s, e.Level, e.Message, e.ContextMap()))
			}
		}
	}
	return leaks
}

// reqOption shapes a request the way a browser, an OpenCode client or an
// attacker would.
type reqOption func(*http.Request)

// withAuth sets the Authorization header; "" sends none.
func withAuth(value string) reqOption {
	return func(r *http.Request) {
		if value != "" {
			r.Header.Set("Authorization", value)
		}
	}
}

func withOrigin(origin string) reqOption {
	return func(r *http.Request) { r.Header.Set("Origin", origin) }
}

func withHost(host string) reqOption { return func(r *http.Request) { r.Host = host } }

// withContentType sets the Content-Type; "" sends none.
func withContentType(ct string) reqOption {
	return func(r *http.Request) {
		if ct == "" {
			r.Header.Del("Content-Type")
			return
		}
		r.Header.Set("Content-Type", ct)
	}
}

// preflight makes the request a CORS preflight for method.
func preflight(method string) reqOption {
	return func(r *http.Request) {
		r.Header.Set("Access-Control-Request-Method", method)
		r.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	}
}

// send makes one request. A body is sent as application/json unless an
// option says otherwise. An event stream is read up to its first frame, which
// becomes the body. No response may ever allow every origin.
func send(t *testing.T, h *harness, method, path, body string, opts ...reqOption) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(path, "/mcp") {
		req.Header.Set("Accept", mcpAccept) // as every MCP client sends it
	}
	for _, o := range opts {
		o(req)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var data []byte
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		data, err = firstFrame(res.Body)
	} else {
		data, err = io.ReadAll(res.Body)
	}
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	if got := res.Header.Values("Access-Control-Allow-Origin"); slices.Contains(got, "*") {
		t.Errorf("%s %s (Origin %q): Access-Control-Allow-Origin: *", method, path, req.Header.Get("Origin"))
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: data}
}

// firstFrame reads an event stream up to the end of its first frame.
func firstFrame(r io.Reader) ([]byte, error) {
	br := bufio.NewReader(r)
	var frame []byte
	for {
		line, err := br.ReadBytes('\n')
		frame = append(frame, line...)
		if err != nil {
			return frame, err
		}
		if len(line) == 1 && len(frame) > 1 {
			return frame, nil
		}
	}
}

// routeRole says who a route is for.
type routeRole int

const (
	operatorRoute routeRole = iota
	sharedRoute             // health and the API document: either role
	agentRoute
)

// route is one of questiond's routes, with a request that succeeds when the
// caller may use it.
type route struct {
	role   routeRole
	method string
	// {id}: the question the request is about; "ses_{id}" is a session
	// that world.create configures along with each question.
	path string
	body string
	ok   int // the status of that successful request
}

func (r route) String() string { return r.method + " " + r.path }

// on is the route's path about question id.
func (r route) on(id string) string { return strings.Replace(r.path, "{id}", id, 1) }

func (r route) writes() bool { return r.method != http.MethodGet }

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

var (
	replyBody  = `{"answers":[["SY215C"],["Low power"]]}`
	promptBody = `{"agent":"questiond","parts":[{"type":"text","text":"hello"}]}`
	createBody = mustJSON(seedForm())
	// elicitBody times out quickly: a POST /elicit that is let through
	// answers cancel instead of waiting for an operator.
	elicitBody = func() string {
		form := seedForm()
		form["timeout"] = "200ms"
		return mustJSON(form)
	}()
)

// everyRoute is every route questiond serves.
var everyRoute = []route{
	{operatorRoute, http.MethodGet, "/question", "", http.StatusOK},
	{operatorRoute, http.MethodPost, "/question/{id}/reply", replyBody, http.StatusOK},
	{operatorRoute, http.MethodPost, "/question/{id}/reject", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/event", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/events", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/global/event", "", http.StatusOK},
	// The web page and its form route.
	{operatorRoute, http.MethodGet, "/questiond/question/{id}/form", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/", "", http.StatusFound},
	{operatorRoute, http.MethodGet, "/ui", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/ui/app.js", "", http.StatusOK},
	// The console: an operator's request succeeds with these statuses; a
	// typed prompt's refusal and an unknown session's 404 are the answers.
	{operatorRoute, http.MethodGet, "/config", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/config/providers", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/provider", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/agent", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/session", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/session/status", "", http.StatusOK},
	{operatorRoute, http.MethodGet, "/session/ses_{id}", "", http.StatusNotFound},
	{operatorRoute, http.MethodGet, "/session/ses_{id}/message", "", http.StatusNotFound},
	{operatorRoute, http.MethodPost, "/session", promptBody, http.StatusBadRequest},
	{operatorRoute, http.MethodPost, "/session/ses_{id}/message", promptBody, http.StatusBadRequest},
	{sharedRoute, http.MethodGet, "/global/health", "", http.StatusOK},
	{sharedRoute, http.MethodGet, "/doc", "", http.StatusOK},
	{agentRoute, http.MethodPost, "/elicitations", createBody, http.StatusCreated},
	{agentRoute, http.MethodGet, "/elicitations/{id}", "", http.StatusOK},
	{agentRoute, http.MethodDelete, "/elicitations/{id}", "", http.StatusOK},
	{agentRoute, http.MethodPost, "/elicit", elicitBody, http.StatusOK},
	// The session routes answer 200 for a session that is configured, as
	// world.create leaves every "ses_{id}"; the body differs from what it
	// configures, so a PUT let through shows in world.snapshot.
	{agentRoute, http.MethodPut, "/sessions/ses_{id}", sessionBody, http.StatusOK},
	{agentRoute, http.MethodGet, "/sessions/ses_{id}", "", http.StatusOK},
	{agentRoute, http.MethodDelete, "/sessions/ses_{id}", "", http.StatusOK},
	{agentRoute, http.MethodPost, "/mcp", initializeBody, http.StatusOK},
}

// sessionBody is what the route table PUTs; worldSessionBody is what
// world.create configures.
const (
	sessionBody      = `{"questionCapability":"parent","parentSessionID":"ses_parent"}`
	worldSessionBody = `{"questionCapability":"user"}`
)

func routesFor(roles ...routeRole) []route {
	var out []route
	for _, r := range everyRoute {
		if slices.Contains(roles, r.role) {
			out = append(out, r)
		}
	}
	return out
}

// world is a questiond with one pending question of each agent, alpha and
// beta, and an operator's event stream that has seen everything so far. It
// tells whether a refused request changed anything.
type world struct {
	h                *harness
	operator         string // a valid operator's Authorization; "" when operators have no credentials
	alpha, beta      string // the agents' Authorization; "" without agent tokens
	alphaQ, betaQ    string
	owners           map[string]string // alphaQ and betaQ → their owner's Authorization
	events           *stream
	state            string // the store as operators and owners see it
	operatorUsername string
}

func newWorld(t *testing.T, opts httpapi.Options) *world {
	t.Helper()
	w := &world{h: newObservedHarness(t, opts), owners: map[string]string{}, operatorUsername: opts.Auth.OperatorUsername}
	if w.operatorUsername == "" {
		w.operatorUsername = "opencode"
	}
	if opts.Auth.OperatorPassword != "" {
		w.operator = basicAuth(w.operatorUsername, opts.Auth.OperatorPassword)
	}
	if tok, ok := opts.Auth.AgentTokens["alpha"]; ok {
		w.alpha = bearerAuth(tok)
	}
	if tok, ok := opts.Auth.AgentTokens["beta"]; ok {
		w.beta = bearerAuth(tok)
	}
	w.alphaQ = w.create(t, w.alpha)
	w.betaQ = w.create(t, w.beta)
	w.owners[w.alphaQ], w.owners[w.betaQ] = w.alpha, w.beta
	path := "/event"
	if opts.Auth.OperatorPassword != "" {
		path += "?auth_token=" + b64(w.operatorUsername+":"+opts.Auth.OperatorPassword)
	}
	w.events = w.h.openStream(path)
	w.events.expect(t, "server.connected")
	announced := []string{askedID(t, w.events.expect(t, "question.asked")), askedID(t, w.events.expect(t, "question.asked"))}
	want := []string{w.alphaQ, w.betaQ}
	slices.Sort(announced)
	slices.Sort(want)
	if !slices.Equal(announced, want) {
		t.Fatalf("a new stream announced %v, want %v", announced, want)
	}
	w.state = w.snapshot(t)
	return w
}

func askedID(t *testing.T, f frame) string {
	t.Helper()
	var q struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(f.Properties, &q); err != nil || q.ID == "" {
		t.Fatalf("question.asked without an id: %s", f.Raw)
	}
	return q.ID
}

// create asks the seed form as the agent with Authorization auth and
// returns the question's id. It also configures session "ses_<id>" as that
// agent, for the session routes of the route table.
func (w *world) create(t *testing.T, auth string) string {
	t.Helper()
	res := send(t, w.h, http.MethodPost, "/elicitations", createBody, withAuth(auth))
	if res.Status != http.StatusCreated {
		t.Fatalf("POST /elicitations as %q: %d %s", auth, res.Status, res.Body)
	}
	var c created
	res.json(t, &c)
	if res := send(t, w.h, http.MethodPut, "/sessions/ses_"+c.ID, worldSessionBody, withAuth(auth)); res.Status != http.StatusCreated {
		t.Fatalf("PUT /sessions/ses_%s as %q: %d %s", c.ID, auth, res.Status, res.Body)
	}
	return c.ID
}

// snapshot is the store as an operator lists it (every pending question,
// sentinels included), as alpha and beta read their first questions, and
// the sessions configured along with those.
func (w *world) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	res := send(t, w.h, http.MethodGet, "/question", "", withAuth(w.operator))
	if res.Status != http.StatusOK {
		t.Fatalf("GET /question as the operator: %d %s", res.Status, res.Body)
	}
	fmt.Fprintf(&b, "GET /question: %s\n", res.Body)
	ids := make([]string, 0, len(w.owners))
	for id := range w.owners {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		res := send(t, w.h, http.MethodGet, "/elicitations/"+id, "", withAuth(w.owners[id]))
		if res.Status != http.StatusOK {
			t.Fatalf("GET /elicitations/%s as its owner: %d %s", id, res.Status, res.Body)
		}
		fmt.Fprintf(&b, "GET /elicitations/%s: %s\n", id, res.Body)
		res = send(t, w.h, http.MethodGet, "/sessions/ses_"+id, "", withAuth(w.owners[id]))
		if res.Status != http.StatusOK {
			t.Fatalf("GET /sessions/ses_%s as its owner: %d %s", id, res.Status, res.Body)
		}
		fmt.Fprintf(&b, "GET /sessions/ses_%s: %s\n", id, res.Body)
	}
	return b.String()
}

// unchanged fails the test if anything stored changed since the last check,
// or if any event was published: a sentinel question asked now must be the
// next event on the operator's stream.
func (w *world) unchanged(t *testing.T, what string) {
	t.Helper()
	if now := w.snapshot(t); now != w.state {
		t.Errorf("%s changed the store:\nbefore:\n%s\nafter:\n%s", what, w.state, now)
	}
	sentinel := w.create(t, w.alpha)
	for {
		f := w.events.next(t)
		if f.Type == "question.asked" && askedID(t, f) == sentinel {
			break
		}
		t.Errorf("%s published an event: %s", what, f.Raw)
	}
	w.state = w.snapshot(t)
}

// fresh is a new pending question of alpha's, for a request that uses it up.
func (w *world) fresh(t *testing.T) string {
	t.Helper()
	id := w.create(t, w.alpha)
	for f := w.events.next(t); f.Type != "question.asked" || askedID(t, f) != id; f = w.events.next(t) {
	}
	return id
}

// credentialsFor is a valid Authorization for the route's role.
func (w *world) credentialsFor(r route) string {
	if r.role == agentRoute {
		return w.alpha
	}
	return w.operator
}

// credential is an Authorization header value (or its absence) with a name
// for test output.
type credential struct {
	name  string
	value string
}

// wantChallenge checks a 401 the way the route's role answers it: operator
// and shared routes exactly as OpenCode (empty body, Basic challenge, Vary:
// Origin), agent routes with a Bearer challenge and a JSON error.
func wantChallenge(t *testing.T, r route, req string, res response) {
	t.Helper()
	if res.Status != http.StatusUnauthorized {
		t.Errorf("%s: status %d %s, want 401", req, res.Status, res.Body)
		return
	}
	challenge := res.Header.Get("WWW-Authenticate")
	if r.role == agentRoute {
		if challenge != `Bearer realm="questiond"` {
			t.Errorf("%s: WWW-Authenticate %q, want %q", req, challenge, `Bearer realm="questiond"`)
		}
		wantNamedError(t, req, res, "Unauthorized")
		return
	}
	if challenge != `Basic realm="Secure Area"` {
		t.Errorf("%s: WWW-Authenticate %q, want %q", req, challenge, `Basic realm="Secure Area"`)
	}
	if len(res.Body) != 0 {
		t.Errorf("%s: body %q, want none (as OpenCode)", req, res.Body)
	}
	if !varyHas(res.Header, "Origin") {
		t.Errorf("%s: Vary %q lacks Origin (OpenCode sends it on its 401)", req, res.Header.Values("Vary"))
	}
}

// wantNamedError checks a JSON error body {"name": name, "data": {"message": …}}.
func wantNamedError(t *testing.T, req string, res response, name string) {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", req, ct)
	}
	var body struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res.Body, &body); err != nil || body.Name != name || body.Data.Message == "" {
		t.Errorf("%s: body %s, want {\"name\":%q,\"data\":{\"message\":…}}", req, res.Body, name)
	}
}

func wantStatusError(t *testing.T, req string, res response, status int, name string) {
	t.Helper()
	if res.Status != status {
		t.Errorf("%s: status %d %s, want %d", req, res.Status, res.Body, status)
		return
	}
	wantNamedError(t, req, res, name)
}

func varyHas(h http.Header, name string) bool {
	for _, v := range h.Values("Vary") {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), name) {
				return true
			}
		}
	}
	return false
}

// noRedirects shows a redirect (GET /) as it is answered.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
