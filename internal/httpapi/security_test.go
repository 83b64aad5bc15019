package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/testenv"
)

// The access-control rules of issue 5, through real HTTP: every route
// refuses wrong credentials, roles stay apart, agents see only their own
// questions, foreign pages and foreign Host names are turned away, refused
// requests change nothing, and no secret reaches the log. Every harness here
// checks the log for secrets when its test ends.

var (
	badBasic = []credential{
		{"missing", ""},
		{"wrong password", basicAuth("opencode", wrongPassword)},
		{"wrong username", basicAuth("admin", operatorPassword)},
		{"Basic not base64", "Basic !!" + operatorPassword + "!!"},
		{"Basic without colon", "Basic " + b64("opencode"+operatorPassword)},
		{"Basic empty", "Basic "},
		{"agent token as Basic", basicAuth("alpha", alphaToken)},
	}
	badBearer = []credential{
		{"unknown bearer", bearerAuth(unknownToken)},
		{"empty bearer", "Bearer "},
		{"password as bearer", bearerAuth(operatorPassword)},
	}
	badScheme = []credential{
		{"unknown scheme", `Digest username="opencode", realm="Secure Area"`},
		{"token under another scheme", "Token " + alphaToken},
		{"bare token", alphaToken},
	}
)

func join(lists ...[]credential) []credential {
	var out []credential
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// refusal is a set of credentials that every one of some routes answers
// with 401.
type refusal struct {
	routes []route
	creds  []credential
}

func TestAuthRefusesBadCredentialsOnEveryRoute(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "every route with every kind of bad credential (over 20 s under -race)")
	variants := []struct {
		name     string
		auth     httpapi.Auth
		refusals []refusal
	}{
		{"operator and agents", authBoth(), []refusal{
			{everyRoute, join(badBasic, badBearer, badScheme)},
		}},
		{"operator only", authOperatorOnly(), []refusal{
			{routesFor(operatorRoute, sharedRoute), join(badBasic, badBearer, badScheme)},
			// Agents need no token here, but wrong operator credentials are still wrong.
			{routesFor(agentRoute), join(badBasic[1:], badScheme)},
		}},
		{"agents only", authAgentsOnly(), []refusal{
			{routesFor(agentRoute, sharedRoute), join(badBasic, badBearer, badScheme)},
			{routesFor(operatorRoute), join(badBearer, badScheme)},
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t, httpapi.Options{Auth: v.auth})
			for _, ref := range v.refusals {
				for _, r := range ref.routes {
					for _, c := range ref.creds {
						if c.value == "" && r.path == "/global/health" {
							continue // probes ask without credentials: see TestHealthAnswersProbes
						}
						req := r.method + " " + r.on(w.alphaQ) + " with " + c.name + " (" + c.value + ")"
						res := send(t, w.h, r.method, r.on(w.alphaQ), r.body, withAuth(c.value))
						wantChallenge(t, r, req, res)
						w.unchanged(t, req)
					}
				}
			}
		})
	}
}

// operatorsMayUse reports whether operators may use agent route r too: the
// session records, which operators may change for any session.
func operatorsMayUse(r route) bool { return strings.HasPrefix(r.path, "/sessions/") }

func TestAuthSeparatesRoles(t *testing.T) {
	t.Parallel()
	type separation struct {
		routes []route
		creds  []credential
	}
	opViaQuery := "?auth_token=" + b64("opencode:"+operatorPassword)
	variants := []struct {
		name       string
		auth       httpapi.Auth
		forbidden  []separation
		viaQuery   bool // also operator credentials as ?auth_token= on agent routes
		sharedOpen []credential
	}{
		{"operator and agents", authBoth(), []separation{
			{routesFor(agentRoute), []credential{{"operator", basicAuth("opencode", operatorPassword)}}},
			{routesFor(operatorRoute), []credential{{"agent alpha", bearerAuth(alphaToken)}, {"agent beta", bearerAuth(betaToken)}}},
		}, true, []credential{{"operator", basicAuth("opencode", operatorPassword)}, {"agent alpha", bearerAuth(alphaToken)}}},
		{"operator only", authOperatorOnly(), []separation{
			{routesFor(agentRoute), []credential{{"operator", basicAuth("opencode", operatorPassword)}}},
		}, true, []credential{{"operator", basicAuth("opencode", operatorPassword)}}},
		{"agents only", authAgentsOnly(), []separation{
			{routesFor(operatorRoute), []credential{{"agent alpha", bearerAuth(alphaToken)}}},
		}, false, []credential{{"agent alpha", bearerAuth(alphaToken)}}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t, httpapi.Options{Auth: v.auth})
			for _, sep := range v.forbidden {
				for _, r := range sep.routes {
					for _, c := range sep.creds {
						if operatorsMayUse(r) && strings.HasPrefix(c.value, "Basic ") {
							continue // see TestOperatorsMayChangeAnySession
						}
						req := r.method + " " + r.on(w.alphaQ) + " as " + c.name
						res := send(t, w.h, r.method, r.on(w.alphaQ), r.body, withAuth(c.value))
						wantStatusError(t, req, res, http.StatusForbidden, "Forbidden")
						w.unchanged(t, req)
					}
				}
			}
			if v.viaQuery {
				for _, r := range routesFor(agentRoute) {
					if operatorsMayUse(r) {
						continue
					}
					req := r.method + " " + r.on(w.alphaQ) + " as the operator with ?auth_token="
					res := send(t, w.h, r.method, r.on(w.alphaQ)+opViaQuery, r.body)
					wantStatusError(t, req, res, http.StatusForbidden, "Forbidden")
					w.unchanged(t, req)
				}
			}
			for _, r := range routesFor(sharedRoute) {
				for _, c := range v.sharedOpen {
					if res := send(t, w.h, r.method, r.path, "", withAuth(c.value)); res.Status != http.StatusOK {
						t.Errorf("%s as %s: %d %s, want 200", r, c.name, res.Status, res.Body)
					}
				}
			}
		})
	}
}

func TestAuthAgentsSeeOnlyTheirOwnQuestions(t *testing.T) {
	t.Parallel()
	w := newWorld(t, httpapi.Options{Auth: authBoth()})
	unknown := sameLengthUnknown(w.betaQ)

	// alpha's view of beta's question must be its view of a question that
	// does not exist, to the byte, headers included.
	same := func(method, suffix string) {
		t.Helper()
		req := method + " /elicitations/" + w.betaQ + suffix + " as alpha"
		start := time.Now()
		got := send(t, w.h, method, "/elicitations/"+w.betaQ+suffix, "", withAuth(w.alpha))
		if took := time.Since(start); strings.Contains(suffix, "wait=") && took > 10*time.Second {
			t.Errorf("%s waited %s on beta's question", req, took)
		}
		ref := send(t, w.h, method, "/elicitations/"+unknown+suffix, "", withAuth(w.alpha))
		if ref.Status != http.StatusNotFound {
			t.Fatalf("%s /elicitations/%s (unknown): %d %s, want 404", method, unknown, ref.Status, ref.Body)
		}
		var tagged struct {
			Tag       string `json:"_tag"`
			RequestID string `json:"requestID"`
			Message   string `json:"message"`
		}
		if err := json.Unmarshal(ref.Body, &tagged); err != nil || tagged.Tag != "QuestionNotFoundError" || tagged.RequestID != unknown || tagged.Message == "" {
			t.Errorf("unknown id: body %s, want QuestionNotFoundError naming %s", ref.Body, unknown)
		}
		want := strings.ReplaceAll(string(ref.Body), unknown, w.betaQ)
		if got.Status != ref.Status || string(got.Body) != want {
			t.Errorf("%s: %d %s, want %d %s (as for an unknown id)", req, got.Status, got.Body, ref.Status, want)
		}
		for name := range ref.Header {
			if name != "Date" && got.Header.Get(name) != ref.Header.Get(name) {
				t.Errorf("%s: header %s %q, unknown id gets %q", req, name, got.Header.Get(name), ref.Header.Get(name))
			}
		}
		for name := range got.Header {
			if _, ok := ref.Header[name]; !ok {
				t.Errorf("%s: header %s %q, which an unknown id does not get", req, name, got.Header.Get(name))
			}
		}
		w.unchanged(t, req)
	}

	same(http.MethodGet, "")
	same(http.MethodGet, "?wait=20s")
	same(http.MethodDelete, "")

	// alpha cannot list or watch questions, and cannot answer beta's.
	for _, r := range routesFor(operatorRoute) {
		req := r.method + " " + r.on(w.betaQ) + " as alpha"
		wantStatusError(t, req, send(t, w.h, r.method, r.on(w.betaQ), r.body, withAuth(w.alpha)), http.StatusForbidden, "Forbidden")
		w.unchanged(t, req)
	}

	// alpha still sees its own; beta still sees and waits on its own.
	for _, own := range []struct{ auth, id string }{{w.alpha, w.alphaQ}, {w.beta, w.betaQ}} {
		res := send(t, w.h, http.MethodGet, "/elicitations/"+own.id+"?wait=10ms", "", withAuth(own.auth))
		var c created
		if res.Status == http.StatusOK {
			res.json(t, &c)
		}
		if res.Status != http.StatusOK || c.ID != own.id || c.Status != "pending" {
			t.Errorf("GET /elicitations/%s?wait=10ms as its owner: %d %s, want 200 pending", own.id, res.Status, res.Body)
		}
	}

	// Once beta's question has ended it is no more alpha's than before.
	if res := send(t, w.h, http.MethodPost, "/question/"+w.betaQ+"/reply", replyBody, withAuth(w.operator)); res.Status != http.StatusOK {
		t.Fatalf("operator's reply to beta's question: %d %s", res.Status, res.Body)
	}
	w.events.expect(t, "question.replied")
	w.state = w.snapshot(t)
	same(http.MethodGet, "")
	same(http.MethodGet, "?wait=20s")
	same(http.MethodDelete, "")
	res := send(t, w.h, http.MethodGet, "/elicitations/"+w.betaQ, "", withAuth(w.beta))
	var c created
	res.json(t, &c)
	if res.Status != http.StatusOK || c.Status != "resolved" || c.Result == nil || c.Result.Action != "accept" || c.Result.Content["model"] != "SY215C" {
		t.Errorf("GET /elicitations/%s as beta after the reply: %d %s, want its accepted result", w.betaQ, res.Status, res.Body)
	}

	// beta withdraws its own pending question; alpha could not.
	betaQ2 := w.create(t, w.beta)
	w.events.expect(t, "question.asked")
	if res := send(t, w.h, http.MethodDelete, "/elicitations/"+betaQ2, "", withAuth(w.beta)); res.Status != http.StatusOK {
		t.Errorf("DELETE /elicitations/%s as beta: %d %s, want 200", betaQ2, res.Status, res.Body)
	}
}

// sameLengthUnknown is an id like id that names no question.
func sameLengthUnknown(id string) string {
	last := id[len(id)-1]
	repl := byte('0')
	if last == '0' {
		repl = '1'
	}
	return id[:len(id)-1] + string(repl)
}

func TestAuthTokenQueryForEventSourceClients(t *testing.T) {
	t.Parallel()
	w := newWorld(t, httpapi.Options{Auth: authBoth()})
	routes := []route{}
	for _, r := range routesFor(operatorRoute) {
		if r.method == http.MethodGet {
			routes = append(routes, r)
		}
	}
	for _, r := range routes {
		path := r.path
		if strings.HasPrefix(path, "/questiond/question/") {
			path = r.on(w.alphaQ) // a question's route answers 200 for a pending one
		}
		res := send(t, w.h, r.method, path+"?auth_token="+b64("opencode:"+operatorPassword), "")
		if res.Status != r.ok {
			t.Errorf("%s?auth_token=<valid>: %d %s, want %d", r, res.Status, res.Body, r.ok)
		}
		if strings.Contains(r.path, "event") && !strings.Contains(string(res.Body), "server.connected") {
			t.Errorf("%s?auth_token=<valid>: first frame %q, want server.connected", r, res.Body)
		}
	}
	wrong := []credential{
		{"wrong password", b64("opencode:" + wrongPassword)},
		{"wrong username", b64("admin:" + operatorPassword)},
		{"no colon", b64("opencode" + operatorPassword)},
		{"not base64", "%21%21" + operatorPassword},
		{"the raw password", operatorPassword},
		{"an agent token", alphaToken},
	}
	for _, r := range routes {
		for _, c := range wrong {
			req := r.String() + "?auth_token=<" + c.name + ">"
			wantChallenge(t, r, req, send(t, w.h, r.method, r.path+"?auth_token="+c.value, ""))
		}
	}
	w.unchanged(t, "wrong auth_token")
}

func TestAuthBasicSchemeAndUsername(t *testing.T) {
	t.Parallel()
	h := newObservedHarness(t, httpapi.Options{Auth: authBoth()})
	encoded := b64("opencode:" + operatorPassword)
	for _, scheme := range []string{"Basic", "basic", "BASIC", "bAsIc"} {
		for _, path := range []string{"/question", "/global/health", "/event"} {
			if res := send(t, h, http.MethodGet, path, "", withAuth(scheme+" "+encoded)); res.Status != http.StatusOK {
				t.Errorf("GET %s with %q scheme: %d %s, want 200", path, scheme, res.Status, res.Body)
			}
		}
	}

	custom := httpapi.Auth{OperatorUsername: "night-shift", OperatorPassword: operatorPassword}
	h = newObservedHarness(t, httpapi.Options{Auth: custom})
	for _, c := range []struct {
		user string
		want int
	}{{"night-shift", http.StatusOK}, {"opencode", http.StatusUnauthorized}, {"Night-Shift", http.StatusUnauthorized}} {
		if res := send(t, h, http.MethodGet, "/question", "", withAuth(basicAuth(c.user, operatorPassword))); res.Status != c.want {
			t.Errorf("GET /question as %q with username night-shift configured: %d, want %d", c.user, res.Status, c.want)
		}
		if res := send(t, h, http.MethodGet, "/event?auth_token="+b64(c.user+":"+operatorPassword), ""); res.Status != c.want {
			t.Errorf("GET /event?auth_token= as %q with username night-shift configured: %d, want %d", c.user, res.Status, c.want)
		}
	}
}

func TestAuthOpenRolesNeedNoCredentials(t *testing.T) {
	t.Parallel()
	stray := []credential{
		{"none", ""},
		{"Basic", basicAuth("opencode", wrongPassword)},
		{"Basic not base64", "Basic !!!"},
		{"Bearer", bearerAuth(unknownToken)},
		{"unknown scheme", "Digest x"},
		{"bare", "whatever"},
	}
	variants := []struct {
		name   string
		auth   httpapi.Auth
		routes []route
		creds  []credential
		query  bool // also a stray ?auth_token=
	}{
		// As OpenCode without a password: credentials are not looked at.
		{"no credentials configured", httpapi.Auth{}, everyRoute, stray, true},
		{"operator only: agents", authOperatorOnly(), routesFor(agentRoute), []credential{stray[0], stray[3]}, false},
		{"agents only: operators", authAgentsOnly(), routesFor(operatorRoute), []credential{stray[0], stray[1], stray[2]}, true},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t, httpapi.Options{Auth: v.auth})
			for _, r := range v.routes {
				for _, c := range v.creds {
					res := send(t, w.h, r.method, r.on(w.fresh(t)), r.body, withAuth(c.value))
					if res.Status != r.ok {
						t.Errorf("%s with %s credentials: %d %s, want %d", r, c.name, res.Status, res.Body, r.ok)
					}
				}
				if v.query {
					sep := "?"
					if strings.Contains(r.path, "?") {
						sep = "&"
					}
					res := send(t, w.h, r.method, r.on(w.fresh(t))+sep+"auth_token="+b64("x:"+wrongPassword), r.body)
					if res.Status != r.ok {
						t.Errorf("%s with a stray auth_token: %d %s, want %d", r, res.Status, res.Body, r.ok)
					}
				}
			}
		})
	}
}

var foreignOrigins = []string{
	"https://evil.example",
	"null", // sandboxed frames and file: pages
	"http://localhost.evil.example",
	"http://127.0.0.1.evil.example:5173",
	"https://opencode.ai.evil.example",
	"https://evilopencode.ai",
}

func TestCORSRefusesForeignPages(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "every route from foreign origins (over 15 s under -race)")
	w := newWorld(t, httpapi.Options{Auth: authBoth()})
	for _, origin := range foreignOrigins {
		for _, r := range everyRoute {
			// The preflight: answered without an allowed origin, so the
			// browser never sends the request.
			req := "OPTIONS " + r.on(w.alphaQ) + " from " + origin
			res := send(t, w.h, http.MethodOptions, r.on(w.alphaQ), "", withOrigin(origin), preflight(r.method))
			if res.Status != http.StatusNoContent {
				t.Errorf("%s: status %d %s, want 204 (as OpenCode)", req, res.Status, res.Body)
			}
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("%s: Access-Control-Allow-Origin %q, want none", req, got)
			}
			w.unchanged(t, req)

			if !r.writes() {
				// A simple GET goes out, but the page may not read the answer.
				res := send(t, w.h, r.method, r.on(w.alphaQ), "", withOrigin(origin), withAuth(w.credentialsFor(r)))
				if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
					t.Errorf("%s %s from %s: Access-Control-Allow-Origin %q, want none", r.method, r.on(w.alphaQ), origin, got)
				}
				continue
			}
			// Simple requests a page sends without asking first, even with
			// credentials the browser remembers: refused before the handler.
			for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json"} {
				req := r.method + " " + r.on(w.alphaQ) + " from " + origin + " as " + ct + " with valid credentials"
				res := send(t, w.h, r.method, r.on(w.alphaQ), r.body, withOrigin(origin), withAuth(w.credentialsFor(r)), withContentType(ct))
				wantStatusError(t, req, res, http.StatusForbidden, "Forbidden")
				if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
					t.Errorf("%s: Access-Control-Allow-Origin %q, want none", req, got)
				}
				w.unchanged(t, req)
			}
		}
	}
	// A reject without body or credentials: the easiest request a page can send.
	req := "POST /question/" + w.alphaQ + "/reject from https://evil.example, no body, no credentials"
	res := send(t, w.h, http.MethodPost, "/question/"+w.alphaQ+"/reject", "", withOrigin("https://evil.example"))
	if res.Status != http.StatusForbidden && res.Status != http.StatusUnauthorized {
		t.Errorf("%s: %d %s, want 403 or 401", req, res.Status, res.Body)
	}
	w.unchanged(t, req)
}

func TestCORSAllowsListedOrigins(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "every route from listed origins (7 s under -race)")
	const extra = "https://ops.example.com:8443"
	w := newWorld(t, httpapi.Options{Auth: authBoth(), CORSOrigins: []string{extra}})
	allowed := []string{"http://localhost:5173", "http://127.0.0.1:3000", "https://app.opencode.ai", "https://opencode.ai", "oc://renderer", "tauri://localhost", extra}
	for _, origin := range allowed {
		for _, r := range everyRoute {
			// Preflights are answered before auth: no credentials.
			req := "OPTIONS " + r.on(w.alphaQ) + " from " + origin + " without credentials"
			res := send(t, w.h, http.MethodOptions, r.on(w.alphaQ), "", withOrigin(origin), preflight(r.method))
			if res.Status != http.StatusNoContent {
				t.Errorf("%s: status %d %s, want 204", req, res.Status, res.Body)
			}
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != origin {
				t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", req, got, origin)
			}
			if got := res.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(got, r.method) {
				t.Errorf("%s: Access-Control-Allow-Methods %q lacks %s", req, got, r.method)
			}
			if got := strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(got, "authorization") {
				t.Errorf("%s: Access-Control-Allow-Headers %q lacks authorization", req, got)
			}
			if !varyHas(res.Header, "Origin") {
				t.Errorf("%s: Vary %q lacks Origin", req, res.Header.Values("Vary"))
			}
			w.unchanged(t, req)
		}
	}
	// The real requests, with credentials, get the origin reflected. (Last:
	// they change the store, and a POST /elicit's timeout is published late.)
	for _, origin := range allowed {
		for _, r := range everyRoute {
			id := w.alphaQ
			if r.writes() && strings.Contains(r.path, "{id}") {
				id = w.fresh(t) // used up by the request
			}
			res := send(t, w.h, r.method, r.on(id), r.body, withOrigin(origin), withAuth(w.credentialsFor(r)))
			if res.Status != r.ok {
				t.Errorf("%s from %s with credentials: %d %s, want %d", r, origin, res.Status, res.Body, r.ok)
			}
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != origin {
				t.Errorf("%s from %s: Access-Control-Allow-Origin %q, want it reflected", r, origin, got)
			}
		}
	}
}

var attackerHosts = []string{
	"attacker.example",
	"attacker.example:4097",
	"localhost.attacker.example",
	"127.0.0.1.nip.io:4097",
	"10.1.2.3:4097", // an IP literal that is not the loopback address questiond listens on
}

func TestHostGuardRefusesForeignNames(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "every route with foreign Host names (7 s under -race)")
	w := newWorld(t, httpapi.Options{Auth: authBoth(), ListenAddr: "127.0.0.1:4097", AllowedHosts: []string{"questiond.internal"}})
	for _, host := range attackerHosts {
		for _, r := range everyRoute {
			req := r.method + " " + r.on(w.alphaQ) + " with Host " + host + " and valid credentials"
			res := send(t, w.h, r.method, r.on(w.alphaQ), r.body, withHost(host), withAuth(w.credentialsFor(r)))
			wantStatusError(t, req, res, http.StatusMisdirectedRequest, "MisdirectedRequest")
			w.unchanged(t, req)

			req = "OPTIONS " + r.on(w.alphaQ) + " with Host " + host
			res = send(t, w.h, http.MethodOptions, r.on(w.alphaQ), "", withHost(host), withOrigin("http://localhost:5173"), preflight(r.method))
			wantStatusError(t, req, res, http.StatusMisdirectedRequest, "MisdirectedRequest")
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("%s: Access-Control-Allow-Origin %q, want none", req, got)
			}
			w.unchanged(t, req)
		}
	}

	port := w.h.URL[strings.LastIndex(w.h.URL, ":")+1:]
	for _, host := range []string{"localhost", "localhost:4097", "LOCALHOST:" + port, "localhost.:" + port, "127.0.0.1:" + port, "[::1]:" + port, "questiond.internal", "questiond.internal:8443", "Questiond.Internal."} {
		wantHostServed(t, w, host)
	}
}

func TestHostGuardOnEveryInterface(t *testing.T) {
	t.Parallel()
	w := newWorld(t, httpapi.Options{Auth: authBoth(), ListenAddr: "0.0.0.0:4097"})
	for _, host := range []string{"10.1.2.3:4097", "192.168.1.20", "[fe80::1]:4097", "[2001:db8::7]:4097", "localhost:4097"} {
		wantHostServed(t, w, host)
	}
	for _, host := range []string{"attacker.example", "my-laptop", "my-laptop.local:4097", "10.1.2.3.nip.io"} {
		for _, r := range everyRoute {
			req := r.method + " " + r.on(w.alphaQ) + " with Host " + host + " (listening on 0.0.0.0)"
			res := send(t, w.h, r.method, r.on(w.alphaQ), r.body, withHost(host), withAuth(w.credentialsFor(r)))
			wantStatusError(t, req, res, http.StatusMisdirectedRequest, "MisdirectedRequest")
			w.unchanged(t, req)
		}
	}
}

func TestHostGuardServesTheListenName(t *testing.T) {
	t.Parallel()
	w := newWorld(t, httpapi.Options{Auth: authBoth(), ListenAddr: "questiond.lan:4097"})
	wantHostServed(t, w, "questiond.lan:4097")
	res := send(t, w.h, http.MethodGet, "/global/health", "", withHost("attacker.example:4097"), withAuth(w.operator))
	wantStatusError(t, "GET /global/health with Host attacker.example:4097 (listening on questiond.lan)", res, http.StatusMisdirectedRequest, "MisdirectedRequest")
}

// wantHostServed checks that requests naming host are served: a read by
// each role and a preflight.
func wantHostServed(t *testing.T, w *world, host string) {
	t.Helper()
	for _, c := range []struct{ method, path, auth string }{
		{http.MethodGet, "/question", w.operator},
		{http.MethodGet, "/global/health", w.operator},
		{http.MethodGet, "/elicitations/" + w.alphaQ, w.alpha},
	} {
		if res := send(t, w.h, c.method, c.path, "", withHost(host), withAuth(c.auth)); res.Status != http.StatusOK {
			t.Errorf("%s %s with Host %s: %d %s, want 200", c.method, c.path, host, res.Status, res.Body)
		}
	}
	if res := send(t, w.h, http.MethodOptions, "/question/"+w.alphaQ+"/reply", "", withHost(host), withOrigin("http://localhost:5173"), preflight(http.MethodPost)); res.Status != http.StatusNoContent {
		t.Errorf("preflight with Host %s: %d %s, want 204", host, res.Status, res.Body)
	}
}

// TestSecurityLogsNoSecrets uses every credential form, right and wrong, on
// every route; the harness then finds none of them in any log entry (see
// newObservedHarness). It also shows that the check sees a secret where
// one is.
func TestSecurityLogsNoSecrets(t *testing.T) {
	t.Parallel()
	w := newWorld(t, httpapi.Options{Auth: authBoth()})
	all := join(badBasic, badBearer, badScheme, []credential{
		{"operator", w.operator}, {"alpha", w.alpha}, {"beta", w.beta},
	})
	for _, r := range everyRoute {
		for _, c := range all {
			send(t, w.h, r.method, r.on(w.fresh(t)), r.body, withAuth(c.value))
		}
		for _, token := range []string{b64("opencode:" + operatorPassword), b64("opencode:" + wrongPassword), unknownToken} {
			send(t, w.h, r.method, r.on(w.fresh(t))+"?auth_token="+token, r.body)
		}
	}

	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	log.Info("harmless", zap.String("path", "/question"))
	log.Debug("auth", zap.String("header", basicAuth("opencode", operatorPassword)))
	log.With(zap.String("token", betaToken)).Warn("with")
	leaks := leakedSecrets(logs.All(), secretsOf(authBoth()))
	if len(leaks) != 2 {
		t.Errorf("the secrets check found %d leaks in two leaking entries, one harmless: %q", len(leaks), leaks)
	}
}
