package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/overlay"
	"github.com/questiond/questiond/internal/pending"
)

// fakeOpenCode is an OpenCode server as far as the overlay can tell: it
// lists one question of its own and records every request it gets.
type fakeOpenCode struct {
	*httptest.Server
	stop chan struct{} // closed to end its event streams
	mu   sync.Mutex
	seen []seenRequest
	subs map[*fakeSubscriber]struct{} // its event streams, which emit writes to
	list string                       // its GET /question
}

// fakeSubscriber is one event stream the fake serves.
type fakeSubscriber struct {
	global bool
	frames chan string
}

type seenRequest struct {
	Method, Path, Query, Authorization, Body, AcceptEncoding string
}

const (
	upstreamQuestionID      = "que_0000000000010000000000000a" // an OpenCode id: older than questiond's, untagged
	upstreamPassword        = "upstream-password-123"
	overlayOperatorPassword = "questiond-operator-456"
)

// upstreamSessions are the fake's sessions: a root, its child, the child's
// child, each in its own directory.
var upstreamSessions = map[string]string{
	"ses_root":       `{"id":"ses_root","directory":"/work/root","title":"root"}`,
	"ses_child":      `{"id":"ses_child","parentID":"ses_root","directory":"/work/child","title":"child"}`,
	"ses_grandchild": `{"id":"ses_grandchild","parentID":"ses_child","directory":"/work/grandchild","title":"grandchild"}`,
	"ses_other":      `{"id":"ses_other","directory":"/work/other","title":"another root"}`,
}

func newFakeOpenCode(t *testing.T) *fakeOpenCode {
	f := &fakeOpenCode{
		stop: make(chan struct{}), subs: make(map[*fakeSubscriber]struct{}),
		list: `[` + theirQuestion(upstreamQuestionID, "ses_upstream") + `]`,
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(body), r.Header.Get("Accept-Encoding")})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/question":
			f.mu.Lock()
			list := f.list
			f.mu.Unlock()
			_, _ = io.WriteString(w, list)
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/question/"):
			f.setList(`[]`) // its one question answered
			_, _ = io.WriteString(w, `true`)
		case r.URL.Path == "/event" || r.URL.Path == "/global/event":
			w.Header().Set("Content-Type", "text/event-stream")
			event := `{"id":"evt_up1","type":"server.connected","properties":{}}`
			if r.URL.Path == "/global/event" {
				event = `{"payload":` + event + `}`
			}
			sub := &fakeSubscriber{global: r.URL.Path == "/global/event", frames: make(chan string, 1024)}
			f.mu.Lock()
			f.subs[sub] = struct{}{}
			f.mu.Unlock()
			defer func() {
				f.mu.Lock()
				delete(f.subs, sub)
				f.mu.Unlock()
			}()
			_, _ = io.WriteString(w, "data: "+event+"\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-f.stop:
					return
				case frame := <-sub.frames:
					_, _ = io.WriteString(w, frame)
					w.(http.Flusher).Flush()
				}
			}
		case r.URL.Path == "/session":
			_, _ = io.WriteString(w, `[{"id":"ses_upstream","title":"upstream's"}]`)
		case strings.HasPrefix(r.URL.Path, "/session/"):
			info, ok := upstreamSessions[strings.TrimPrefix(r.URL.Path, "/session/")]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"name":"NotFoundError","data":{"message":"Session not found"}}`)
				return
			}
			_, _ = io.WriteString(w, info)
		default:
			_, _ = io.WriteString(w, `{"path":"`+r.URL.Path+`"}`)
		}
	}))
	t.Cleanup(func() {
		f.endStreams()
		f.Close()
	})
	return f
}

// emit sends an event of the server's to every event stream it serves
// now, framed for each (/global/event wraps it with the directory of
// OpenCode's session ses_root).
func (f *fakeOpenCode) emit(typ, properties string) {
	f.emitOn(true, typ, properties)
}

// emitOn is emit, to the /event streams only unless global: as if the
// /global/event ones were late with it.
func (f *fakeOpenCode) emitOn(global bool, typ, properties string) {
	event := `{"id":"` + ident.Ascending(ident.Event) + `","type":"` + typ + `","properties":` + properties + `}`
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs {
		if sub.global && !global {
			continue
		}
		data := event
		if sub.global {
			data = `{"directory":"/work/root","project":"global","payload":` + event + `}`
		}
		sub.frames <- "data: " + data + "\n\n"
	}
}

// setList changes its GET /question, without an event.
func (f *fakeOpenCode) setList(list string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = list
}

// endStreams ends the event streams it serves, as a restart would.
func (f *fakeOpenCode) endStreams() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
}

func (f *fakeOpenCode) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func overlayHarness(t *testing.T) (*harness, *fakeOpenCode) {
	h, up, _ := overlayHarnessWith(t, pending.Options{})
	return h, up
}

// overlayHarnessWith is overlayHarness with the store's options, and the
// server questiond is in front of.
func overlayHarnessWith(t *testing.T, store pending.Options) (*harness, *fakeOpenCode, *overlay.Upstream) {
	up := newFakeOpenCode(t)
	server, err := overlay.New(overlay.Options{URL: up.URL, Password: upstreamPassword})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, tuning{store: store, api: httpapi.Options{
		Upstream: server,
		Auth: httpapi.Auth{
			OperatorPassword: overlayOperatorPassword, UpstreamPassword: upstreamPassword,
			AgentTokens: map[string]string{"alpha": alphaToken},
		},
	}}, zaptest.NewLogger(t))
	return h, up, server
}

// Routes questiond does not own reach the server with the server's own
// credentials, whichever password the operator logged in with; questiond's
// credentials never reach it, and agents never reach it at all.
func TestTheOverlayForwardsWhatItDoesNotOwn(t *testing.T) {
	h, up := overlayHarness(t)
	for _, pass := range []string{overlayOperatorPassword, upstreamPassword} {
		res := h.do(http.MethodGet, "/session?start=1", nil, "Authorization", basic("opencode", pass))
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), "upstream's") {
			t.Fatalf("GET /session with password %q: %d %s", pass, res.Status, res.Body)
		}
	}
	res := h.do(http.MethodGet, "/config?auth_token="+base64.StdEncoding.EncodeToString([]byte("opencode:"+overlayOperatorPassword)), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET /config with auth_token: %d %s", res.Status, res.Body)
	}
	if res := h.do(http.MethodGet, "/session", nil, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusForbidden {
		t.Errorf("an agent's GET /session: %d %s, want 403", res.Status, res.Body)
	}
	if res := h.do(http.MethodGet, "/session", nil); res.Status != http.StatusUnauthorized {
		t.Errorf("GET /session without credentials: %d, want 401", res.Status)
	}
	seen := up.requests()
	if len(seen) != 3 {
		t.Fatalf("the server got %d requests, want 3 (two sessions, one config): %+v", len(seen), seen)
	}
	for _, r := range seen {
		if r.Authorization != basic("opencode", upstreamPassword) || strings.Contains(r.Query, "auth_token") {
			t.Errorf("%s %s?%s reached the server with Authorization %q", r.Method, r.Path, r.Query, r.Authorization)
		}
	}
	if seen[0].Query != "start=1" {
		t.Errorf("the query reached the server as %q", seen[0].Query)
	}
}

// GET /question lists both servers' questions, oldest first; a reply to
// questiond's own is answered by questiond, one to the server's goes to
// the server with its body.
func TestTheOverlayMergesQuestionsAndRoutesReplies(t *testing.T) {
	h, up := overlayHarness(t)
	op := basic("opencode", upstreamPassword)
	res := h.do(http.MethodPost, "/elicitations", seedForm(), "Authorization", bearerAuth(alphaToken))
	var ours created
	res.json(t, &ours)
	list := h.do(http.MethodGet, "/question?directory=%2Fwork", nil, "Authorization", op)
	var listed []struct{ ID string }
	list.json(t, &listed)
	if len(listed) != 2 || listed[0].ID != upstreamQuestionID || listed[1].ID != ours.ID {
		t.Fatalf("GET /question: %s; want the server's then questiond's", list.Body)
	}
	if q := up.requests()[0]; q.Path != "/question" || q.Query != "directory=%2Fwork" {
		t.Errorf("the server was asked %s?%s", q.Path, q.Query)
	}

	reply := `{"answers":[["SY215C"],[]]}`
	if res := h.do(http.MethodPost, "/question/"+ours.ID+"/reply", reply, "Authorization", op); res.Status != http.StatusOK {
		t.Fatalf("reply to questiond's question: %d %s", res.Status, res.Body)
	}
	if res := h.do(http.MethodPost, "/question/"+upstreamQuestionID+"/reply", `{"answers":[["x"]]}`, "Authorization", op); res.Status != http.StatusOK {
		t.Fatalf("reply to the server's question: %d %s", res.Status, res.Body)
	}
	var forwarded []seenRequest
	for _, r := range up.requests() {
		if r.Method == http.MethodPost {
			forwarded = append(forwarded, r)
		}
	}
	if len(forwarded) != 1 || forwarded[0].Path != "/question/"+upstreamQuestionID+"/reply" || forwarded[0].Body != `{"answers":[["x"]]}` {
		t.Fatalf("the server got %+v; want only the reply to its own question, body intact", forwarded)
	}
	// An id questiond issued but does not have (forgotten, or from a
	// replica's lost disk) is still questiond's: 404 here, never forwarded.
	if res := h.do(http.MethodPost, "/question/"+ident.Ascending(ident.Question)+"/reject", nil, "Authorization", op); res.Status != http.StatusNotFound {
		t.Errorf("reject of a question questiond does not have: %d %s, want 404", res.Status, res.Body)
	}
	if n := len(up.requests()); n != 2 {
		t.Errorf("the server got %d requests, want 2", n)
	}
}

// /mcp is questiond's for MCP-shaped requests and the server's for
// OpenCode's own (its MCP servers' status and configuration).
func TestTheOverlaySplitsMCPByShape(t *testing.T) {
	h, up := overlayHarness(t)
	op := basic("opencode", upstreamPassword)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	res := h.do(http.MethodPost, "/mcp", initialize, "Authorization", bearerAuth(alphaToken), "Accept", "application/json, text/event-stream")
	if res.Status != http.StatusOK || !strings.Contains(string(res.Body), "questiond") {
		t.Fatalf("an agent's MCP initialize: %d %s", res.Status, res.Body)
	}
	res = h.do(http.MethodPost, "/mcp", initialize, "Authorization", bearerAuth(alphaToken))
	if res.Status == http.StatusForbidden || strings.Contains(string(res.Body), `"path"`) {
		t.Fatalf("a JSON-RPC body without MCP's Accept went to the server: %d %s", res.Status, res.Body)
	}
	if res := h.do(http.MethodGet, "/mcp", nil, "Authorization", op); res.Status != http.StatusOK || string(res.Body) != `{"path":"/mcp"}` {
		t.Errorf("the TUI's GET /mcp: %d %s, want the server's", res.Status, res.Body)
	}
	add := `{"name":"github","config":{"type":"remote","url":"https://example.com/mcp"}}`
	if res := h.do(http.MethodPost, "/mcp", add, "Authorization", op); res.Status != http.StatusOK || string(res.Body) != `{"path":"/mcp"}` {
		t.Errorf("OpenCode's POST /mcp: %d %s, want the server's", res.Status, res.Body)
	}
	var bodies []string
	for _, r := range up.requests() {
		bodies = append(bodies, r.Method+" "+r.Body)
	}
	if len(bodies) != 2 || bodies[1] != "POST "+add {
		t.Errorf("the server got %q", bodies)
	}
}

// A server that does not answer is a 502 naming it.
func TestTheOverlayWithoutItsServer(t *testing.T) {
	h, up := overlayHarness(t)
	up.Close()
	res := h.do(http.MethodGet, "/session", nil, "Authorization", basic("opencode", overlayOperatorPassword))
	var body struct {
		Name string
		Data struct{ Message string }
	}
	res.json(t, &body)
	if res.Status != http.StatusBadGateway || !strings.Contains(body.Data.Message, up.URL) {
		t.Fatalf("GET /session with the server down: %d %s", res.Status, res.Body)
	}
	res = h.do(http.MethodGet, "/question", nil, "Authorization", basic("opencode", overlayOperatorPassword))
	if res.Status != http.StatusBadGateway {
		t.Fatalf("GET /question with the server down: %d %s", res.Status, res.Body)
	}
}

// A question asked in one of the server's sessions is filed where the
// OpenCode TUI shows it — the session itself when it is a root or a
// root's child, else its ancestor that is a root's child — with that
// session's directory, and the asking session kept. Any agent may ask
// there; a session the server does not have is questiond's as ever.
func TestTheOverlayFilesQuestionsInTheServersSessions(t *testing.T) {
	h, _ := overlayHarness(t)
	for asked, want := range map[string]struct{ listed, asking, dir string }{
		"ses_root":       {"ses_root", "", "/work/root"},
		"ses_child":      {"ses_child", "", "/work/child"},
		"ses_grandchild": {"ses_child", "ses_grandchild", "/work/child"},
	} {
		form := seedForm()
		form["sessionID"], form["directory"] = asked, "/elsewhere"
		res := h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
		var e struct{ SessionID, AskingSessionID, Directory string }
		res.json(t, &e)
		if res.Status != http.StatusCreated || e.SessionID != want.listed || e.AskingSessionID != want.asking || e.Directory != want.dir {
			t.Errorf("asked in %s: %d %s; want filed in %s, asking %q, directory %s", asked, res.Status, res.Body, want.listed, want.asking, want.dir)
		}
	}
	form := seedForm()
	form["sessionID"] = "ses_questiond_own"
	res := h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
	var e struct{ SessionID, AskingSessionID string }
	res.json(t, &e)
	if res.Status != http.StatusCreated || e.SessionID != "ses_questiond_own" || e.AskingSessionID != "" {
		t.Errorf("asked in a session the server does not have: %d %s", res.Status, res.Body)
	}
	// The operator's record still refuses.
	put := h.do(http.MethodPut, "/sessions/ses_root", map[string]string{"questionCapability": "none"}, "Authorization", basic("opencode", upstreamPassword))
	if put.Status != http.StatusCreated && put.Status != http.StatusOK {
		t.Fatalf("the operator's PUT: %d %s", put.Status, put.Body)
	}
	form["sessionID"] = "ses_root"
	if res := h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusForbidden {
		t.Errorf("asked in a session whose capability is none: %d %s, want 403", res.Status, res.Body)
	}
}

// A server that cannot say where a question goes is a 502: nothing asked.
func TestTheOverlayRefusesWhenTheServerCannotPlace(t *testing.T) {
	h, up := overlayHarness(t)
	up.Close()
	form := seedForm()
	form["sessionID"] = "ses_child"
	res := h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
	if res.Status != http.StatusBadGateway || !strings.Contains(string(res.Body), "nothing was asked") {
		t.Fatalf("asked with the server down: %d %s", res.Status, res.Body)
	}
	if n, _ := h.store.Count(t.Context(), pending.Filter{}); n != 0 {
		t.Fatalf("%d questions stored", n)
	}
}

// The TUI's stream through questiond starts with the server's
// server.connected; a question it cannot show (not filed in one of the
// server's sessions) comes with a toast saying where to answer it, on the
// TUI's streams only; a question filed in the server's session comes
// without. When the server's stream ends, the client's does too.
func TestTheOverlayStreamsAndToasts(t *testing.T) {
	h, up := overlayHarness(t)
	op := basic("opencode", upstreamPassword)
	tui := h.openStream("/event", "Authorization", op, "User-Agent", "opencode/1.18.33")
	web := h.openStream("/event", "Authorization", op)
	for _, s := range []*stream{tui, web} {
		if f := s.expect(t, "server.connected"); f.ID != "evt_up1" {
			t.Fatalf("the first frame is questiond's own server.connected %s, not the server's", f.Raw)
		}
	}
	asAlpha(t, h, seedForm())
	tui.expect(t, "question.asked")
	toast := tui.expect(t, "tui.toast.show")
	if !strings.Contains(string(toast.Properties), "/ui") || !strings.Contains(string(toast.Properties), "alpha") {
		t.Errorf("the toast says %s; want the asker and where to answer", toast.Properties)
	}
	web.expect(t, "question.asked")

	hosted := seedForm()
	hosted["sessionID"] = "ses_root"
	asAlpha(t, h, hosted)
	for _, s := range []*stream{tui, web} {
		if f := s.expect(t, "question.asked"); !strings.Contains(string(f.Properties), "ses_root") {
			t.Fatalf("want the question in ses_root next, got %s", f.Raw)
		}
	}
	up.endStreams()
	for _, s := range []*stream{tui, web} {
		select {
		case f, ok := <-s.frames:
			if ok {
				t.Fatalf("a frame after the server's stream ended: %s", f.Raw)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the client's stream goes on after the server's ended")
		}
	}
}

// asAlpha asks form as the agent alpha.
func asAlpha(t *testing.T, h *harness, form map[string]any) {
	t.Helper()
	if res := h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusCreated {
		t.Fatalf("POST /elicitations: %d %s", res.Status, res.Body)
	}
}

// The server's other event streams pass through as they are, uncompressed
// (a compressing server may hold frames back).
func TestTheOverlayForwardsOtherStreamsUncompressed(t *testing.T) {
	h, up := overlayHarness(t)
	res := h.do(http.MethodGet, "/api/event", nil, "Authorization", basic("opencode", upstreamPassword),
		"Accept", "text/event-stream", "Accept-Encoding", "gzip, br")
	if res.Status != http.StatusOK {
		t.Fatalf("GET /api/event: %d %s", res.Status, res.Body)
	}
	seen := up.requests()
	if len(seen) != 1 || seen[0].Path != "/api/event" || seen[0].AcceptEncoding != "identity" {
		t.Fatalf("the server got %+v; want GET /api/event asking for identity", seen)
	}
}

// The OpenCode TUI's streams in front of a server announce one question
// per session tree at a time, whichever server asked it; every other
// stream gets every question as it comes.

const tuiAgent = "opencode/1.18.33"

// tuiRemount is how long after one question of a tree the TUI must get the
// next, not to render it with the first one's state (overlay spike, §6.6).
const tuiRemount = 200 * time.Millisecond

// theirQuestion is the properties of the server's question.asked.
func theirQuestion(id, session string) string {
	return `{"id":"` + id + `","sessionID":"` + session + `","questions":[{"question":"Theirs?","header":"Theirs","options":[]}]}`
}

// silent checks that s carries nothing but heartbeats for d.
func (s *stream) silent(t *testing.T, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatal("event stream ended")
			}
			if f.Type != "server.heartbeat" {
				t.Fatalf("got %s (%s) while the stream should hold it back", f.Type, f.Raw)
			}
		case <-timeout:
			return
		}
	}
}

// requestID is the id of a question.asked frame.
func requestID(t *testing.T, f frame) string {
	t.Helper()
	var p struct{ ID string }
	if err := json.Unmarshal(f.Properties, &p); err != nil || p.ID == "" {
		t.Fatalf("no id in %s", f.Raw)
	}
	return p.ID
}

// openTUIAndWeb opens path as the TUI and as another client, past the
// server's server.connected.
func openTUIAndWeb(t *testing.T, h *harness, path string) (tui, web *stream) {
	op := basic("opencode", upstreamPassword)
	tui = h.openStream(path, "Authorization", op, "User-Agent", tuiAgent)
	web = h.openStream(path, "Authorization", op)
	tui.expect(t, "server.connected")
	web.expect(t, "server.connected")
	return tui, web
}

// A marker is an event of the server's that no gate holds: what comes
// before it on a stream was sent before it.
const markerProps = `{"sessionID":"ses_other","status":{"type":"idle"}}`

func TestTheTUIGetsOursOnceTheServersQuestionOfTheTreeEnds(t *testing.T) {
	h, up := overlayHarness(t)
	tui, web := openTUIAndWeb(t, h, "/global/event")
	const theirs = "que_00000000000200000000000001"
	up.emit("question.asked", theirQuestion(theirs, "ses_child"))
	for _, s := range []*stream{tui, web} {
		if id := requestID(t, s.expect(t, "question.asked")); id != theirs {
			t.Fatalf("got %s, want the server's question", id)
		}
	}
	form := seedForm()
	form["sessionID"] = "ses_grandchild" // filed in ses_child: tree ses_root
	asAlpha(t, h, form)
	ours := requestID(t, web.expect(t, "question.asked"))
	up.emit("session.status", markerProps)
	tui.expect(t, "session.status")
	tui.silent(t, 500*time.Millisecond)

	ended := time.Now()
	up.emit("question.replied", `{"sessionID":"ses_child","requestID":"`+theirs+`","answers":[]}`)
	tui.expect(t, "question.replied")
	if id := requestID(t, tui.expect(t, "question.asked")); id != ours {
		t.Fatalf("got %s, want questiond's %s", id, ours)
	}
	if gap := time.Since(ended); gap < tuiRemount {
		t.Errorf("questiond's question came %v after the server's ended, want at least %v", gap, tuiRemount)
	}
}

func TestTheTUIGetsTheServersQuestionOnceOursOfTheTreeEnds(t *testing.T) {
	h, up := overlayHarness(t)
	tui, web := openTUIAndWeb(t, h, "/event")
	form := seedForm()
	form["sessionID"] = "ses_root"
	asAlpha(t, h, form)
	ours := requestID(t, tui.expect(t, "question.asked"))
	web.expect(t, "question.asked")

	const theirs, answeredElsewhere = "que_00000000000200000000000002", "que_00000000000200000000000003"
	up.emit("question.asked", theirQuestion(theirs, "ses_grandchild"))
	up.emit("question.asked", theirQuestion(answeredElsewhere, "ses_child"))
	up.emit("question.rejected", `{"sessionID":"ses_child","requestID":"`+answeredElsewhere+`"}`)
	for _, want := range []string{"question.asked", "question.asked", "question.rejected"} {
		web.expect(t, want)
	}
	up.emit("session.status", markerProps)
	tui.expect(t, "question.rejected") // the ending passes; its question never shows
	tui.expect(t, "session.status")
	tui.silent(t, 300*time.Millisecond)

	ended := time.Now()
	if res := h.do(http.MethodPost, "/question/"+ours+"/reply", `{"answers":[["SY215C"],[]]}`, "Authorization", basic("opencode", upstreamPassword)); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	tui.expect(t, "question.replied")
	if id := requestID(t, tui.expect(t, "question.asked")); id != theirs {
		t.Fatalf("got %s, want the server's %s", id, theirs)
	}
	if gap := time.Since(ended); gap < tuiRemount {
		t.Errorf("the server's question came %v after questiond's ended, want at least %v", gap, tuiRemount)
	}
	up.emit("session.status", markerProps)
	tui.expect(t, "session.status") // and not the question answered elsewhere
}

func TestTheTUIHoldsOursWhileAPermissionOfTheTreeIsPending(t *testing.T) {
	h, up := overlayHarness(t)
	tui, web := openTUIAndWeb(t, h, "/global/event")
	up.emit("permission.asked", `{"id":"per_1","sessionID":"ses_grandchild","permission":"bash","patterns":["ls"],"metadata":{},"always":[]}`)
	tui.expect(t, "permission.asked")
	web.expect(t, "permission.asked")
	form := seedForm()
	form["sessionID"] = "ses_root"
	asAlpha(t, h, form)
	ours := requestID(t, web.expect(t, "question.asked"))
	up.emit("session.status", markerProps)
	tui.expect(t, "session.status")
	tui.silent(t, 300*time.Millisecond)

	ended := time.Now()
	up.emit("permission.replied", `{"sessionID":"ses_grandchild","requestID":"per_1","reply":"once"}`)
	tui.expect(t, "permission.replied")
	if id := requestID(t, tui.expect(t, "question.asked")); id != ours {
		t.Fatalf("got %s, want questiond's %s", id, ours)
	}
	if gap := time.Since(ended); gap < tuiRemount {
		t.Errorf("questiond's question came %v after the permission ended, want at least %v", gap, tuiRemount)
	}
}

func TestTheTUIDoesNotHoldQuestionsOfAnotherTree(t *testing.T) {
	h, up := overlayHarness(t)
	tui, _ := openTUIAndWeb(t, h, "/event")
	up.emit("question.asked", theirQuestion("que_00000000000200000000000004", "ses_root"))
	tui.expect(t, "question.asked")
	up.emit("permission.asked", `{"id":"per_2","sessionID":"ses_child","permission":"bash","patterns":["ls"],"metadata":{},"always":[]}`)
	tui.expect(t, "permission.asked")
	form := seedForm()
	form["sessionID"] = "ses_other"
	asAlpha(t, h, form)
	if f := tui.expect(t, "question.asked"); !strings.Contains(string(f.Properties), "ses_other") {
		t.Fatalf("got %s, want questiond's question in ses_other", f.Raw)
	}
}

// The pending questions a new TUI stream is told of come one per tree too.
func TestTheTUIsReplayHoldsAllButOneQuestionPerTree(t *testing.T) {
	h, _ := overlayHarness(t)
	var ids []string
	for _, session := range []string{"ses_root", "ses_grandchild"} {
		form := seedForm()
		form["sessionID"] = session
		res := h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
		var c created
		res.json(t, &c)
		ids = append(ids, c.ID)
	}
	tui, web := openTUIAndWeb(t, h, "/global/event")
	for _, id := range ids {
		if got := requestID(t, web.expect(t, "question.asked")); got != id {
			t.Fatalf("another client's replay: %s, want %s", got, id)
		}
	}
	if got := requestID(t, tui.expect(t, "question.asked")); got != ids[0] {
		t.Fatalf("the TUI's replay: %s first, want the oldest, %s", got, ids[0])
	}
	tui.silent(t, 300*time.Millisecond)
	if res := h.do(http.MethodPost, "/question/"+ids[0]+"/reject", nil, "Authorization", basic("opencode", upstreamPassword)); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	tui.expect(t, "question.rejected")
	if got := requestID(t, tui.expect(t, "question.asked")); got != ids[1] {
		t.Fatalf("then %s, want %s", got, ids[1])
	}
}
