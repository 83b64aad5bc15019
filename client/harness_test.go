package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testserver"
)

// daemon is a real questiond served over TCP, wired as cmd/questiond wires
// it: an event broker, a memory or durable (bbolt) store, and the HTTP API.
type daemon struct {
	t       *testing.T
	URL     string
	Addr    string
	api     *httpapi.Server
	server  *testserver.Server
	created *atomic.Int64 // questions created by POST /elicitations (201s that are not replays)
}

// daemonConfig says how to start a daemon. Zero values: memory store, a
// random loopback port.
type daemonConfig struct {
	api      httpapi.Options
	boltPath string        // the durable store's file; "" for the memory store
	addr     string        // where to listen; "" for 127.0.0.1:0
	created  *atomic.Int64 // shared across restarts; nil for a new counter
	// wrap puts a handler in front of the API (fault injection); nil for none.
	wrap func(http.Handler) http.Handler
	// store tunes the question store (retention); zero for the defaults.
	store pending.Options
}

func startDaemon(t *testing.T, cfg daemonConfig) *daemon {
	t.Helper()
	created := cfg.created
	if created == nil {
		created = new(atomic.Int64)
	}
	dbURL := ""
	if cfg.boltPath == "" {
		// On PostgreSQL, a daemon without a file gets a database of its
		// own, as a memory store is its own.
		dbURL = databaseURL(t)
	}
	server, err := testserver.Start(testserver.Config{
		API:         cfg.api,
		Store:       cfg.store,
		Events:      sse.Options{Heartbeat: time.Hour},
		DatabaseURL: dbURL,
		BoltPath:    cfg.boltPath,
		Bolt:        pending.BoltOptions{NoSync: true},
		Addr:        cfg.addr,
		Logger:      zaptest.NewLogger(t),
		Wrap: func(api http.Handler) http.Handler {
			handler := countCreated(api, created)
			if cfg.wrap != nil {
				handler = cfg.wrap(handler)
			}
			return handler
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, URL: server.URL, Addr: server.Addr, api: server.API, server: server, created: created}
	t.Cleanup(d.stop)
	return d
}

// intercept puts handle in front of the API for the requests match picks
// (fault injection); the others go on to the API as they are. handle may
// pass its request on to next too.
func intercept(match func(*http.Request) bool, handle func(w http.ResponseWriter, r *http.Request, next http.Handler)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !match(r) {
				next.ServeHTTP(w, r)
				return
			}
			handle(w, r, next)
		})
	}
}

// firstPost picks the first POST the daemon gets, and no other request.
func firstPost() func(*http.Request) bool {
	var seen atomic.Bool
	return func(r *http.Request) bool { return r.Method == http.MethodPost && seen.CompareAndSwap(false, true) }
}

// isPoll picks the agents' GETs of a question (long-polls).
func isPoll(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/elicitations/")
}

// isCreate picks the agents' POST /elicitations.
func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/elicitations"
}

// answerJSON answers with status and body as application/json.
func answerJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// stop shuts the daemon down as cmd/questiond does (the durable store keeps
// pending questions for the next start); it does nothing the second time.
func (d *daemon) stop() {
	if err := d.server.Stop(); err != nil {
		d.t.Errorf("stopping questiond: %v", err)
	}
}

// countCreated counts the questions the API created: 201s to POST
// /elicitations, except those that answer a retry with the question an
// earlier request under the same Idempotency-Key created.
func countCreated(next http.Handler, created *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isCreate(r) {
			next.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == http.StatusCreated && rec.Header().Get("Idempotent-Replayed") == "" {
			created.Add(1)
		}
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// newClient returns a client of the daemon at url with fast retries, whose
// idle connections are closed when the test ends.
func newClient(t *testing.T, url string, opts client.Options) *client.Client {
	t.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	opts.Server = url
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: transport}
	}
	if opts.PollWait == 0 {
		opts.PollWait = 5 * time.Second
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 100 * time.Millisecond
	}
	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// operatorHTTP is the operator's HTTP client; its idle connections are
// closed by closeOperatorConns.
var operatorHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// call sends an operator request and returns the status and body.
func call(t testing.TB, method, url string, body any) (int, []byte) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return testkit.Do(t, operatorHTTP, req)
}

// questionRequest is OpenCode's QuestionRequest, as operators see it.
type questionRequest struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Questions []struct {
		Question string `json:"question"`
		Header   string `json:"header"`
		Options  []struct {
			Label string `json:"label"`
		} `json:"options"`
		Multiple bool `json:"multiple"`
	} `json:"questions"`
}

// pendingQuestions is GET /question.
func pendingQuestions(t testing.TB, base string) []questionRequest {
	t.Helper()
	status, body := call(t, http.MethodGet, base+"/question", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /question: %d %s", status, body)
	}
	var list []questionRequest
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	return list
}

// reply answers question id as an operator.
func reply(t testing.TB, base, id string, answers ...[]string) {
	t.Helper()
	status, body := call(t, http.MethodPost, base+"/question/"+id+"/reply", map[string]any{"answers": answers})
	if status != http.StatusOK {
		t.Fatalf("reply to %s: %d %s", id, status, body)
	}
}

// reject dismisses question id as an operator; action "" means cancel.
func reject(t testing.TB, base, id, action string) {
	t.Helper()
	var body any
	if action != "" {
		body = map[string]string{"action": action}
	}
	status, data := call(t, http.MethodPost, base+"/question/"+id+"/reject", body)
	if status != http.StatusOK {
		t.Fatalf("reject %s: %d %s", id, status, data)
	}
}

// event is one /event frame.
type event struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// events is an operator's live /event stream.
type events struct {
	frames chan event
}

// watch opens the operator event stream of the daemon at base. It ends when
// the test does or the daemon stops.
func watch(t *testing.T, base string) *events {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/event", nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	res, err := operatorHTTP.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET /event: %d", res.StatusCode)
	}
	e := &events{frames: make(chan event, 256)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(e.frames)
		for f := range testkit.Events[event](res.Body, 0) {
			e.frames <- f
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// next returns the next frame of type typ, skipping others.
func (e *events) next(t *testing.T, typ string) event {
	t.Helper()
	return testkit.Next(t, e.frames, 15*time.Second, typ+" event", func(f event) bool { return f.Type == typ })
}

// asked waits for the next question.asked and returns the question.
func (e *events) asked(t *testing.T) questionRequest {
	t.Helper()
	f := e.next(t, "question.asked")
	var q questionRequest
	if err := json.Unmarshal(f.Properties, &q); err != nil {
		t.Fatal(err)
	}
	return q
}

// elicitOutcome is what Elicit returned in another goroutine.
type elicitOutcome struct {
	res *client.Result
	err error
}

// elicitAsync runs Elicit in a goroutine; the result arrives on the channel.
// The test waits for it before it ends.
func elicitAsync(t *testing.T, ctx context.Context, c *client.Client, p client.Params) <-chan elicitOutcome {
	t.Helper()
	out := make(chan elicitOutcome, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := c.Elicit(ctx, p)
		out <- elicitOutcome{res, err}
	}()
	t.Cleanup(wg.Wait)
	return out
}

// await returns the outcome of elicitAsync, failing after 30s.
func await(t *testing.T, out <-chan elicitOutcome) elicitOutcome {
	t.Helper()
	return testkit.Receive(t, out, 30*time.Second, "return of Elicit")
}

func boltPath(t *testing.T) string { return filepath.Join(t.TempDir(), "questiond.db") }

// journalCount is the number of questions recorded in the bbolt file at path.
func journalCount(t *testing.T, path string) int {
	t.Helper()
	j, err := pending.OpenBolt(path, pending.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	records, err := j.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(records)
}

// pauses holds every retry pause of a client until the test lets it go, so
// a test decides what the daemon looks like when the client tries again.
type pauses struct {
	seen chan time.Duration
	gate chan struct{}
	open chan struct{}
	once sync.Once
}

// holdPauses makes c report each pause and wait for release or openAll.
func holdPauses(t *testing.T, c *client.Client) *pauses {
	p := &pauses{seen: make(chan time.Duration, 1000), gate: make(chan struct{}, 1), open: make(chan struct{})}
	client.SetPause(c, func(ctx context.Context, d time.Duration) error {
		p.seen <- d
		select {
		case <-p.gate:
			return nil
		case <-p.open:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	t.Cleanup(p.openAll)
	return p
}

// next waits for the client's next pause and returns its delay.
func (p *pauses) next(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-p.seen:
		return d
	case <-time.After(15 * time.Second):
		t.Fatal("the client did not retry within 15s")
		return 0
	}
}

// release lets one pause end.
func (p *pauses) release() { p.gate <- struct{}{} }

// openAll lets every pause, now and later, end at once.
func (p *pauses) openAll() { p.once.Do(func() { close(p.open) }) }

// refusePauses makes every retry of c fail at once with errRetried, and
// counts them: for tests of what must not be retried.
func refusePauses(c *client.Client) *atomic.Int64 {
	var n atomic.Int64
	client.SetPause(c, func(context.Context, time.Duration) error {
		n.Add(1)
		return errRetried
	})
	return &n
}

var errRetried = errors.New("the client tried again")

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// tcpProxy is a TCP proxy for tests that interfere with connections: each
// connection it accepts is dialled through to backend, and relay says how
// the bytes go up (client to backend) and down (backend to client); each
// direction runs on its own goroutine. Cleanup closes every connection and
// waits for the relays.
type tcpProxy struct {
	URL     string
	ln      net.Listener
	backend string
	relay   func(in, out net.Conn) (up, down func())
	mu      sync.Mutex
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
}

func startTCPProxy(t *testing.T, backend string, relay func(in, out net.Conn) (up, down func())) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{URL: "http://" + ln.Addr().String(), ln: ln, backend: backend, relay: relay, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.backend)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		up, down := p.relay(in, out)
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			up()
		}()
		go func() {
			defer p.wg.Done()
			down()
		}()
	}
}

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// cuttingProxy is a TCP proxy that cuts every connection a moment after a
// long-poll (GET /elicitations/…) goes through it: the first cut is a reset
// (RST), the others a plain close.
type cuttingProxy struct {
	*tcpProxy
	cutAfter time.Duration
	cuts     chan string
	reset    atomic.Bool
}

func startCuttingProxy(t *testing.T, backend string, cutAfter time.Duration) *cuttingProxy {
	t.Helper()
	p := &cuttingProxy{cutAfter: cutAfter, cuts: make(chan string, 1000)}
	p.tcpProxy = startTCPProxy(t, backend, func(in, out net.Conn) (up, down func()) {
		up = func() {
			p.forward(in, out)
			_ = out.Close()
		}
		down = func() {
			_, _ = io.Copy(in, out)
			_ = in.Close()
		}
		return up, down
	})
	return p
}

// forward copies the client's bytes to the backend and arms a cut whenever
// a long-poll passes.
func (p *cuttingProxy) forward(in, out net.Conn) {
	buf := make([]byte, 32<<10)
	var cut sync.Once
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if bytes.Contains(buf[:n], []byte("GET /elicitations/")) {
				cut.Do(func() { time.AfterFunc(p.cutAfter, func() { p.cut(in, out) }) })
			}
			if _, werr := out.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cuttingProxy) cut(in, out net.Conn) {
	how := "close"
	if p.reset.CompareAndSwap(false, true) {
		how = "reset"
		if tcp, ok := in.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close with RST
		}
	}
	_ = in.Close()
	_ = out.Close()
	p.cuts <- how
}
