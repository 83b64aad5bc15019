package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// upstreamKey is the credential the HTTP upstream of these tests wants in
// every request, as --header gives it.
const upstreamKey = "Bearer upstream-key-42"

// seenRequest is a request as the HTTP upstream got it.
type seenRequest struct {
	method string
	header http.Header
}

// httpUpstream is an MCP server served over Streamable HTTP by the go-sdk's
// own handler, behind a check of upstreamKey (401 without it); it keeps
// every request it got.
type httpUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func serveHTTP(t *testing.T, server *mcp.Server, opts *mcp.StreamableHTTPOptions, wrap func(http.Handler) http.Handler) *httpUpstream {
	t.Helper()
	u := &httpUpstream{}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts)
	if wrap != nil {
		h = wrap(h)
	}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, seenRequest{r.Method, r.Header.Clone()})
		u.mu.Unlock()
		if r.Header.Get("Authorization") != upstreamKey {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.Close()
		for ss := range server.Sessions() { // those whose DELETE a test kept from the handler
			_ = ss.Close()
		}
	})
	return u
}

func (u *httpUpstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.seen...)
}

// got reports whether the upstream got a request of method.
func (u *httpUpstream) got(method string) bool {
	for _, r := range u.requests() {
		if r.method == method {
			return true
		}
	}
	return false
}

// relayHTTP starts a relay between an in-memory host end and the upstream
// at url, reached with bridge.StreamableHTTP sending upstreamKey.
func relayHTTP(t *testing.T, opts bridge.Options, url string) (mcp.Transport, *rig) {
	t.Helper()
	return relayOver(t, opts, &bridge.StreamableHTTP{URL: url, Header: http.Header{"Authorization": {upstreamKey}}})
}

func relayOver(t *testing.T, opts bridge.Options, up *bridge.StreamableHTTP) (mcp.Transport, *rig) {
	t.Helper()
	hostEnd, relayHost := mcp.NewInMemoryTransports()
	hc, err := relayHost.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	up.Logger = zaptest.NewLogger(t)
	uc, err := up.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Connection: uc}
	r := &rig{finished: make(chan struct{}), toUpstream: rec, upstream: uc}
	opts.Logger = zaptest.NewLogger(t)
	go func() {
		defer close(r.finished)
		r.runErr = bridge.New(hc, rec, opts).Run(context.Background())
	}()
	t.Cleanup(func() {
		_ = hc.Close()
		<-r.finished
	})
	return hostEnd, r
}

// Over Streamable HTTP (the go-sdk's stateful handler) the relay works as
// over stdio: the host sees the upstream's own server info, a tool that
// does not elicit passes, one that does is answered by the operator in
// questiond. Every request carries the configured header, the session the
// server gave and, after initialize, the negotiated protocol version; a
// notification the server sends outside any call (tools list_changed)
// reaches the host over the standalone stream; the host ending the relay
// DELETEs the session.
func TestTheRelayReachesAnUpstreamOverStreamableHTTP(t *testing.T) {
	base, c := questiond(t)
	ops := testkit.Watch(t, base)
	server, received := upstreamServer()
	up := serveHTTP(t, server, nil, nil)
	hostEnd, r := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	changed := make(chan struct{}, 1)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(t.Context(), hostEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	init := cs.InitializeResult()
	if init.ServerInfo.Name != "upstream-server" || init.Instructions != "Deploys things." {
		t.Fatalf("the host was initialized with %+v, not the upstream's own", init)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over http"}})
	if err != nil || mcptest.ToolText(res) != "echo: over http" {
		t.Fatalf("a tool that does not elicit: %v %v", mcptest.ToolText(res), err)
	}
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	ops.Reply(ops.Asked(), map[string][]string{"Target": {"Production"}, "Replicas": {"3"}, "Confirm": {"Yes"}, "Note": {}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	if got := <-received; got.Action != "accept" || got.Content["target"] != "prd" {
		t.Fatalf("the upstream received %+v", got)
	}

	testkit.Eventually(t, 10*time.Second, "the standalone GET stream", func() bool { return up.got(http.MethodGet) })
	mcp.AddTool(server, &mcp.Tool{Name: "late"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return done, nil, nil
	})
	testkit.Receive(t, changed, 10*time.Second, "tools list_changed from the upstream")

	_ = cs.Close()
	if err := r.ended(t); err != nil {
		t.Fatalf("the host ending the relay: %v", err)
	}
	seen := up.requests()
	session := ""
	for i, req := range seen {
		if req.header.Get("Authorization") != upstreamKey {
			t.Fatalf("request %d (%s) went without the configured header", i, req.method)
		}
		if i == 0 {
			continue // initialize: no session yet
		}
		if session == "" {
			session = req.header.Get("Mcp-Session-Id")
		}
		if s, v := req.header.Get("Mcp-Session-Id"), req.header.Get("MCP-Protocol-Version"); s == "" || s != session || v != "2025-11-25" {
			t.Fatalf("request %d (%s) carried session %q and protocol %q; want %q and 2025-11-25", i, req.method, s, v, session)
		}
	}
	if last := seen[len(seen)-1]; last.method != http.MethodDelete {
		t.Fatalf("the last request was %s, want the DELETE of session %s", last.method, session)
	}
}

// On the go-sdk's stateless handler a 2026-07-28 host works through the
// relay: its requests carry the protocol version and the SEP-2243 method
// and name headers the handler checks, and an upstream asking for input in
// its result gets the operator's answer.
func TestAStatelessUpstreamOn2026(t *testing.T) {
	base, c := questiond(t)
	ops := testkit.Watch(t, base)
	server, received := inputServer()
	up := serveHTTP(t, server, &mcp.StreamableHTTPOptions{Stateless: true}, nil)
	hostEnd, _ := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	cs := host2026(t, hostEnd)
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	ops.Reply(ops.Asked(), map[string][]string{"Target": {"Staging"}, "Replicas": {"4"}, "Confirm": {"Yes"}, "Note": {"go"}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	if res, ok := (<-received)["plan"].(*mcp.ElicitResult); !ok || res.Action != "accept" {
		t.Fatalf("the retry carried %+v", res)
	}
	calls := 0
	for _, req := range up.requests() {
		if req.header.Get("Mcp-Method") == "tools/call" {
			calls++
			if req.header.Get("Mcp-Name") != "deploy" || req.header.Get("MCP-Protocol-Version") != "2026-07-28" {
				t.Fatalf("a tools/call went with headers %v", req.header)
			}
		}
		if req.method == http.MethodGet {
			t.Fatal("a GET stream was opened on protocol 2026-07-28, which has none")
		}
	}
	if calls != 2 {
		t.Fatalf("the upstream got %d tools/call, want the call and its retry", calls)
	}
}

// An upstream that answers with an HTTP error ends the relay with an error
// naming its URL and the status: 500 at initialize, 404 (the session
// gone) on a later call.
func TestAnHTTPErrorFromTheUpstreamEndsTheRelay(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		status     func(body string) int
	}{
		{"500 at initialize", "500 Internal Server Error", func(string) int { return http.StatusInternalServerError }},
		{"404 after initialize", "no longer knows session", func(body string) int {
			if strings.Contains(body, `"method":"tools/call"`) {
				return http.StatusNotFound // as a server that dropped the session answers
			}
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, c := questiond(t)
			server, _ := upstreamServer()
			up := serveHTTP(t, server, nil, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					if status := tc.status(string(body)); status != 0 {
						http.Error(w, "upstream trouble", status)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
			hostEnd, r := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).
				Connect(t.Context(), hostEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err == nil {
				defer cs.Close()
				_, _ = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			}
			err = r.ended(t)
			var httpErr *bridge.HTTPError
			if err == nil || !strings.Contains(err.Error(), up.URL) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "upstream trouble") || !errors.As(err, &httpErr) {
				t.Fatalf("Run returned %v; want an HTTPError naming %s, %q and the body", err, up.URL, tc.want)
			}
		})
	}
}

// The standalone stream broken by the server is opened again with the id
// of the last event it carried (Last-Event-ID), and what the server sends
// afterwards reaches the host.
func TestTheStandaloneStreamResumesFromTheLastEvent(t *testing.T) {
	base, c := questiond(t)
	server, _ := upstreamServer()
	var mu sync.Mutex
	var gets []string // the Last-Event-ID of each GET
	up := serveHTTP(t, server, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				h.ServeHTTP(w, r)
				return
			}
			mu.Lock()
			gets = append(gets, r.Header.Get("Last-Event-ID"))
			first := len(gets) == 1
			mu.Unlock()
			if !first {
				h.ServeHTTP(w, r)
				return
			}
			ctx, cut := context.WithCancel(r.Context())
			defer cut()
			h.ServeHTTP(&cutAfterEvent{ResponseWriter: w, cut: cut}, r.WithContext(ctx))
		})
	})
	hostEnd, _ := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	changed := make(chan struct{}, 2)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(t.Context(), hostEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(gets)
	}
	testkit.Eventually(t, 10*time.Second, "the standalone GET stream", func() bool { return count() == 1 })
	addTool := func(name string) {
		mcp.AddTool(server, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return done, nil, nil
		})
	}
	addTool("first")
	testkit.Receive(t, changed, 10*time.Second, "the first list_changed")
	testkit.Eventually(t, 10*time.Second, "the stream opened again", func() bool { return count() == 2 })
	mu.Lock()
	resumed := gets[1]
	mu.Unlock()
	if resumed == "" {
		t.Fatal("the stream was opened again without Last-Event-ID")
	}
	addTool("second")
	testkit.Receive(t, changed, 10*time.Second, "the list_changed sent after the stream broke")
}

// cutAfterEvent ends the response (as a dropped connection would) once an
// event with data was written.
type cutAfterEvent struct {
	http.ResponseWriter
	cut func()
}

func (w *cutAfterEvent) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if strings.Contains(string(p), "data:") {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		w.cut()
	}
	return n, err
}

func (w *cutAfterEvent) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *cutAfterEvent) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// echoes calls the upstream's echo tool n times at once, as a host with
// several calls in flight does.
func echoes(t *testing.T, cs *mcp.ClientSession, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			text := strings.Repeat("x", i)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			if err == nil && mcptest.ToolText(res) != "echo: "+text {
				err = errors.New("echo " + text + " answered " + mcptest.ToolText(res))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// An upstream that answers calls with JSON bodies (the handler's
// JSONResponse) works too, with several calls at once.
func TestAnUpstreamAnsweringJSON(t *testing.T) {
	base, c := questiond(t)
	server, _ := upstreamServer()
	up := serveHTTP(t, server, &mcp.StreamableHTTPOptions{JSONResponse: true}, nil)
	hostEnd, _ := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	echoes(t, host(t, hostEnd, nil), 8)
}

// A message over the size limit ends the relay, saying so, instead of
// being read whole.
func TestAMessageOverTheLimitEndsTheRelay(t *testing.T) {
	base, c := questiond(t)
	server, _ := upstreamServer()
	up := serveHTTP(t, server, nil, nil)
	hostEnd, r := relayOver(t, bridge.Options{Asker: c, Server: base},
		&bridge.StreamableHTTP{URL: up.URL, Header: http.Header{"Authorization": {upstreamKey}}, MaxMessageBytes: 4096})
	cs := host(t, hostEnd, nil)
	echoes(t, cs, 1)
	_, _ = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": strings.Repeat("y", 5000)}})
	if err := r.ended(t); err == nil || !strings.Contains(err.Error(), "more than 4096 bytes") {
		t.Fatalf("Run returned %v, want the message over 4096 bytes named", err)
	}
}

// A call whose answer stream the server ends without a response (and
// without event ids to resume from) gets an error, and the relay goes on.
func TestACallWhoseStreamEndsWithoutAnswerGetsAnError(t *testing.T) {
	base, c := questiond(t)
	server, _ := upstreamServer()
	up := serveHTTP(t, server, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"vanish"`) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, ": nothing to say\n\n")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		})
	})
	hostEnd, _ := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	cs := host(t, hostEnd, nil)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "vanish"}})
	if err == nil || !strings.Contains(err.Error(), "without a response") {
		t.Fatalf("the call whose answer vanished returned %v", err)
	}
	echoes(t, cs, 2)
}

// Writes racing Close either go out or say the connection is closed; none
// is left running (goleak) and none panics.
func TestWritesRacingClose(t *testing.T) {
	server, _ := upstreamServer()
	up := serveHTTP(t, server, nil, nil)
	for range 20 {
		conn, err := (&bridge.StreamableHTTP{URL: up.URL, Header: http.Header{"Authorization": {upstreamKey}}}).Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				err := conn.Write(t.Context(), &jsonrpc.Request{Method: "notifications/initialized"})
				if err != nil && !strings.Contains(err.Error(), "is closed") {
					t.Errorf("Write: %v", err)
				}
			})
		}
		wg.Go(func() { _ = conn.Close() })
		wg.Wait()
		_ = conn.Close()
	}
}

// A Write its caller gives up on (its context ends before the message is
// sent) fails alone: the connection goes on.
func TestAnAbandonedWriteLeavesTheConnectionUsable(t *testing.T) {
	server, _ := upstreamServer()
	release := make(chan struct{})
	up := serveHTTP(t, server, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > 1<<20 {
				select { // reads nothing: the client's send blocks
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	defer close(release)
	conn, err := (&bridge.StreamableHTTP{URL: up.URL, Header: http.Header{"Authorization": {upstreamKey}}}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	big, _ := json.Marshal(map[string]string{"padding": strings.Repeat("p", 8<<20)})
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/padding", Params: big}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the abandoned Write returned %v", err)
	}
	id, _ := jsonrpc.MakeID(float64(1))
	init := json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}`)
	if err := conn.Write(t.Context(), &jsonrpc.Request{ID: id, Method: "initialize", Params: init}); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.Read(t.Context())
	if r, ok := msg.(*jsonrpc.Response); err != nil || !ok || r.Error != nil {
		t.Fatalf("after an abandoned Write, initialize got %+v %v", msg, err)
	}
}

// A server that offers no GET stream (the go-sdk's stateless handler
// answers it 405) serves a 2025 host all the same. Its elicitations cannot
// reach the relay: a stateless server never learns the capabilities the
// host's initialize declared, and the go-sdk's refuses to elicit.
func TestAServerWithoutAGETStream(t *testing.T) {
	base, c := questiond(t)
	ops := testkit.Watch(t, base)
	server, _ := upstreamServer()
	up := serveHTTP(t, server, &mcp.StreamableHTTPOptions{Stateless: true}, nil)
	hostEnd, _ := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	cs := host(t, hostEnd, nil)
	testkit.Eventually(t, 10*time.Second, "the GET the server refuses", func() bool { return up.got(http.MethodGet) })
	echoes(t, cs, 3)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deploy"})
	if err != nil || !res.IsError || !strings.Contains(mcptest.ToolText(res), "does not support elicitation") {
		t.Fatalf("deploy on a stateless server: %v %+v", err, res)
	}
	if left := ops.Pending(""); len(left) != 0 {
		t.Fatalf("questiond was asked: %+v", left)
	}
}

// A call's answer stream broken after the server's elicitation (the
// connection dropped) is resumed with a GET naming its last event, and the
// call's response, sent while it was broken, arrives there.
func TestACallsStreamResumesFromTheLastEvent(t *testing.T) {
	base, c := questiond(t)
	ops := testkit.Watch(t, base)
	server, received := upstreamServer()
	var mu sync.Mutex
	var resumes []string // the Last-Event-ID of each GET that had one
	up := serveHTTP(t, server, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && id != "" {
				mu.Lock()
				resumes = append(resumes, id)
				mu.Unlock()
			}
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if r.Method != http.MethodPost || !strings.Contains(string(body), `"name":"deploy"`) {
				h.ServeHTTP(w, r)
				return
			}
			ctx, cut := context.WithCancel(r.Context())
			defer cut()
			h.ServeHTTP(&cutAfterEvent{ResponseWriter: w, cut: cut}, r.WithContext(ctx))
		})
	})
	hostEnd, _ := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	cs := host(t, hostEnd, nil)
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	ops.Reply(ops.Asked(), map[string][]string{"Target": {"Staging"}, "Replicas": {"1"}, "Confirm": {"Yes"}, "Note": {}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	if got := <-received; got.Action != "accept" {
		t.Fatalf("the upstream received %+v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resumes) == 0 {
		t.Fatal("the call's stream was not resumed with Last-Event-ID")
	}
}

// A 2026-07-28 tool that wants an argument in a header (x-mcp-header, SEP-2243)
// gets it as Mcp-Param-{Name}, learnt from the tools/list the host made;
// the go-sdk's handler refuses the call without it.
func TestAToolsParamHeadersGoWithItsCalls(t *testing.T) {
	base, c := questiond(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream-server", Version: "2026"}, nil)
	server.AddTool(&mcp.Tool{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"region":{"type":"string","x-mcp-header":"Region"},` +
		`"spec":{"type":"object","properties":{"replicas":{"type":"integer","x-mcp-header":"Replicas"}}}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return done, nil })
	up := serveHTTP(t, server, &mcp.StreamableHTTPOptions{Stateless: true}, nil)
	hostEnd, _ := relayHTTP(t, bridge.Options{Asker: c, Server: base}, up.URL)
	cs := host2026(t, hostEnd)
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "deploy", Arguments: map[string]any{
		"region": "eu-west-1", "spec": map[string]any{"replicas": 3}}})
	if err != nil || res.IsError || mcptest.ToolText(res) != "done" {
		t.Fatalf("CallTool: %v %+v", err, res)
	}
	for _, req := range up.requests() {
		if req.header.Get("Mcp-Method") == "tools/call" &&
			(req.header.Get("Mcp-Param-Region") != "eu-west-1" || req.header.Get("Mcp-Param-Replicas") != "3") {
			t.Fatalf("the call went with headers %v", req.header)
		}
	}
}
