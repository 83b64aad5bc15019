package sse_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// patience bounds every wait, so a broken broker fails a test instead of
// hanging it. Nothing is ordered by it.
const patience = 20 * time.Second

var evtID = regexp.MustCompile(`^evt_[0-9a-f]{12}[0-9A-Za-z]{14}$`)

// harness is a broker served by a real HTTP server the way httpapi mounts it:
// /event?directory=… and /global/event.
type harness struct {
	b  *sse.Broker
	ts *httptest.Server
	// joined gets one value each time a subscriber is registered and its
	// initial func has run.
	joined chan struct{}
	// refused gets why the broker refused a stream, before the harness's
	// server answers it with a 503.
	refused chan error
}

type harnessConfig struct {
	opts    sse.Options
	initial func(r *http.Request) []sse.Message
	setup   func(b *sse.Broker) // runs before the server starts
	// feed, when set, gives each stream a feed: the harness serves it
	// merged (ServeEventMerged, ServeGlobalMerged).
	feed   func(r *http.Request) sse.Feed
	server func(ts *httptest.Server)
	// filter, when set, filters every stream (sse.WithFilter).
	filter sse.NewFilter
}

func newHarness(t testing.TB, cfg harnessConfig) *harness {
	t.Helper()
	if cfg.opts.Logger == nil {
		cfg.opts.Logger = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	}
	b, err := sse.New(cfg.opts)
	if err != nil {
		t.Fatalf("new broker: %v", err)
	}
	if cfg.setup != nil {
		cfg.setup(b)
	}
	h := &harness{b: b, joined: make(chan struct{}, 10000), refused: make(chan error, 10000)}
	initial := func(r *http.Request) func() []sse.Message {
		return func() []sse.Message {
			var out []sse.Message
			if cfg.initial != nil {
				out = cfg.initial(r)
			}
			h.joined <- struct{}{}
			return out
		}
	}
	mux := http.NewServeMux()
	// What a refusal's answer says is the caller's (httpapi) to decide.
	refuse := func(w http.ResponseWriter, err error) {
		if err != nil {
			h.refused <- err
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}
	mux.HandleFunc("GET /event", func(w http.ResponseWriter, r *http.Request) {
		if cfg.filter != nil {
			r = sse.WithFilter(r, cfg.filter)
		}
		if cfg.feed != nil {
			refuse(w, b.ServeEventMerged(w, r, r.URL.Query().Get("directory"), audienceOf(r), initial(r), cfg.feed(r)))
			return
		}
		refuse(w, b.ServeEvent(w, r, r.URL.Query().Get("directory"), audienceOf(r), initial(r)))
	})
	mux.HandleFunc("GET /global/event", func(w http.ResponseWriter, r *http.Request) {
		if cfg.filter != nil {
			r = sse.WithFilter(r, cfg.filter)
		}
		if cfg.feed != nil {
			refuse(w, b.ServeGlobalMerged(w, r, audienceOf(r), initial(r), cfg.feed(r)))
			return
		}
		refuse(w, b.ServeGlobal(w, r, audienceOf(r), initial(r)))
	})
	h.ts = httptest.NewUnstartedServer(mux)
	if cfg.server != nil {
		cfg.server(h.ts)
	}
	h.ts.Start()
	// Cleanups run last first: the broker closes, so streams end, then the
	// server can close.
	t.Cleanup(h.ts.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return h
}

func (h *harness) waitJoined(t testing.TB, n int) {
	t.Helper()
	for range n {
		select {
		case <-h.joined:
		case <-time.After(patience):
			t.Fatalf("subscriber never registered")
		}
	}
}

// waitSubscribers waits until the broker counts n subscribers: a stream
// leaves it just after its connection closes, which its client may see first.
func (h *harness) waitSubscribers(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for h.b.Subscribers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers after %s, want %d", h.b.Subscribers(), patience, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) publish(t testing.TB, dir, typ string, props string) {
	t.Helper()
	m := sse.Message{Directory: dir, Event: sse.Event{Type: typ, Properties: json.RawMessage(props)}}
	if err := h.b.Publish(context.Background(), m); err != nil {
		t.Fatalf("publish %s: %v", typ, err)
	}
}

// clientStream is a raw HTTP/1.1 client of one stream. It checks the chunked
// encoding itself: every chunk must be exactly one `data: <line>\n\n` frame.
type clientStream struct {
	conn   net.Conn
	status string   // "HTTP/1.1 200 OK"
	header []string // raw header lines, in order
	body   string   // the body of a response that is not a stream
	frames chan string
	end    chan error // one value: nil after the last chunk, else why reading stopped
	quit   chan struct{}
	done   chan struct{}
}

func dialStream(t testing.TB, h *harness, target string, header ...string) *clientStream {
	t.Helper()
	s, err := openStream(t, h, target, header...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openStream is dialStream for goroutines other than the test's.
func openStream(t testing.TB, h *harness, target string, header ...string) (*clientStream, error) {
	conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	req := "GET " + target + " HTTP/1.1\r\nHost: questiond.test\r\nAccept: text/event-stream\r\n"
	for _, l := range header {
		req += l + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send request: %w", err)
	}
	s := &clientStream{
		conn:   conn,
		frames: make(chan string, 64),
		end:    make(chan error, 1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	br := bufio.NewReader(conn)
	if err := s.readHead(br); err != nil {
		conn.Close()
		return nil, fmt.Errorf("read response head: %w", err)
	}
	t.Cleanup(s.close)
	if !strings.Contains(s.status, " 200 ") {
		close(s.done)
		return s, nil
	}
	go s.read(br)
	return s, nil
}

func (s *clientStream) readHead(br *bufio.Reader) error {
	_ = s.conn.SetReadDeadline(time.Now().Add(patience))
	defer s.conn.SetReadDeadline(time.Time{})
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	s.status = strings.TrimSuffix(line, "\r\n")
	length := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSuffix(line, "\r\n")
		if line == "" {
			break
		}
		s.header = append(s.header, line)
		if k, v, _ := strings.Cut(line, ": "); strings.EqualFold(k, "Content-Length") {
			length, _ = strconv.Atoi(v)
		}
	}
	if strings.Contains(s.status, " 200 ") {
		return nil
	}
	if length < 0 {
		return fmt.Errorf("%s without Content-Length", s.status)
	}
	body := make([]byte, length)
	_, err = io.ReadFull(br, body)
	s.body = string(body)
	return err
}

func (s *clientStream) read(br *bufio.Reader) {
	defer close(s.done)
	s.end <- s.readChunks(br)
}

func (s *clientStream) readChunks(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		size, err := strconv.ParseUint(strings.TrimSuffix(line, "\r\n"), 16, 32)
		if err != nil {
			return fmt.Errorf("chunk size %q: %w", line, err)
		}
		chunk := make([]byte, size+2)
		if _, err := io.ReadFull(br, chunk); err != nil {
			return err
		}
		if string(chunk[size:]) != "\r\n" {
			return fmt.Errorf("chunk of %d bytes not followed by CRLF", size)
		}
		if size == 0 {
			return nil // the terminating chunk: the server ended the stream cleanly
		}
		f := string(chunk[:size])
		data, ok := strings.CutPrefix(f, "data: ")
		if !ok || !strings.HasSuffix(data, "\n\n") || strings.Count(data, "\n") != 2 {
			return fmt.Errorf("chunk is not exactly one data frame: %.200q", f)
		}
		select {
		case s.frames <- strings.TrimSuffix(data, "\n\n"):
		case <-s.quit:
			return errors.New("stream closed by the test")
		}
	}
}

func (s *clientStream) close() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	s.conn.Close()
	<-s.done
}

// next returns the next frame's JSON.
func (s *clientStream) next(t testing.TB) string {
	t.Helper()
	select {
	case f := <-s.frames:
		return f
	case err := <-s.end:
		s.end <- err
		// The reader queues every frame before it reports the end.
		select {
		case f := <-s.frames:
			return f
		default:
		}
		t.Fatalf("stream ended while a frame was expected: %v", err)
	case <-time.After(patience):
		t.Fatalf("no frame within %v", patience)
	}
	return ""
}

type wireEvent struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

type wireGlobal struct {
	Directory *string   `json:"directory"`
	Project   *string   `json:"project"`
	Payload   wireEvent `json:"payload"`
}

// nextJSON decodes the next frame of s as a T.
func nextJSON[T any](t testing.TB, s *clientStream) T {
	t.Helper()
	var v T
	f := s.next(t)
	if err := json.Unmarshal([]byte(f), &v); err != nil {
		t.Fatalf("frame %q: %v", f, err)
	}
	return v
}

func (s *clientStream) nextEvent(t testing.TB) wireEvent {
	t.Helper()
	return nextJSON[wireEvent](t, s)
}

// nextLive skips heartbeats.
func (s *clientStream) nextLive(t testing.TB) wireEvent {
	t.Helper()
	for {
		if e := s.nextEvent(t); e.Type != "server.heartbeat" {
			return e
		}
	}
}

func (s *clientStream) nextGlobal(t testing.TB) wireGlobal {
	t.Helper()
	return nextJSON[wireGlobal](t, s)
}

// waitEnd waits for the stream to end and returns nil for a clean end (the
// terminating chunk) or the read error.
func (s *clientStream) waitEnd(t testing.TB) error {
	t.Helper()
	for {
		select {
		case <-s.frames:
		case err := <-s.end:
			s.end <- err
			return err
		case <-time.After(patience):
			t.Fatalf("stream did not end within %v", patience)
		}
	}
}

// dialStalled opens a stream on a connection with a tiny receive buffer and
// never reads from it.
func dialStalled(t testing.TB, h *harness, target string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	req := "GET " + target + " HTTP/1.1\r\nHost: questiond.test\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("send request: %v", err)
	}
	return conn
}

// memWriter is an in-process ResponseWriter: each Flush hands over what was
// written since the last one. It takes no write deadlines, like a writer
// behind a middleware that hides them.
type memWriter struct {
	header  http.Header
	status  int
	buf     []byte
	onFlush func(frame []byte)
}

func newMemWriter(onFlush func([]byte)) *memWriter {
	return &memWriter{header: http.Header{}, onFlush: onFlush}
}

func (m *memWriter) Header() http.Header { return m.header }
func (m *memWriter) WriteHeader(code int) {
	if m.status == 0 {
		m.status = code
	}
}
func (m *memWriter) Write(p []byte) (int, error) {
	if m.status == 0 {
		m.status = http.StatusOK
	}
	m.buf = append(m.buf, p...)
	return len(p), nil
}
func (m *memWriter) Flush() {
	if len(m.buf) > 0 {
		f := m.buf
		m.buf = nil
		m.onFlush(f)
	}
}

// gateWriter is an in-process ResponseWriter that takes write deadlines, as
// a network connection does, and whose writes block while its gate is shut:
// a client that stopped reading, in a synctest bubble's fake time.
type gateWriter struct {
	header http.Header

	mu       sync.Mutex
	deadline time.Time
	changed  chan struct{} // closed when the deadline or the gate changes
	shut     bool
	frames   []string
	ended    bool // the handler returned: nothing may be written any more
}

func newGateWriter(shut bool) *gateWriter {
	return &gateWriter{header: http.Header{}, changed: make(chan struct{}), shut: shut}
}

func (g *gateWriter) signalLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gateWriter) setShut(shut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = shut
	g.signalLocked()
}

func (g *gateWriter) SetWriteDeadline(t time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deadline = t
	g.signalLocked()
	return nil
}

func (g *gateWriter) Header() http.Header { return g.header }
func (g *gateWriter) WriteHeader(int)     {}
func (g *gateWriter) Flush()              {}

func (g *gateWriter) Write(p []byte) (int, error) {
	for {
		g.mu.Lock()
		if g.ended {
			g.mu.Unlock()
			panic("write after the handler returned")
		}
		d, changed := g.deadline, g.changed
		if !d.IsZero() && !time.Now().Before(d) {
			g.mu.Unlock()
			return 0, fmt.Errorf("gate writer: %w", os.ErrDeadlineExceeded)
		}
		if !g.shut {
			g.frames = append(g.frames, string(p))
			g.mu.Unlock()
			return len(p), nil
		}
		g.mu.Unlock()
		var expired <-chan time.Time
		if !d.IsZero() {
			timer := time.NewTimer(time.Until(d))
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case <-changed:
		case <-expired:
		}
	}
}

// types returns the event types written so far.
func (g *gateWriter) types(t testing.TB) []string {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, f := range g.frames {
		var e wireEvent
		if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(f, "data: "), "\n\n")), &e); err != nil {
			t.Fatalf("frame %q: %v", f, err)
		}
		out = append(out, e.Type)
	}
	return out
}

// refusal returns why the broker refused the last stream the harness's
// server answered with a 503.
func (h *harness) refusal(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.refused:
		return err
	default:
		t.Fatal("the broker refused no stream")
		return nil
	}
}

// serveGated runs ServeEvent for directory on g until the handler returns;
// the returned channel is closed then.
func serveGated(ctx context.Context, b *sse.Broker, g *gateWriter, directory string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event", nil)
		b.ServeEvent(g, r, directory, sse.Standard, nil)
		g.mu.Lock()
		g.ended = true
		g.mu.Unlock()
	}()
	return done
}

// audienceOf lets a test open a console's stream with ?console=1.
func audienceOf(r *http.Request) sse.Audience {
	if r.URL.Query().Get("console") == "1" {
		return sse.Console
	}
	return sse.Standard
}

// await returns what comes on c, failing the test with failure if nothing
// comes within patience.
func await[T any](t testing.TB, c <-chan T, failure string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(patience):
		t.Fatal(failure)
		var zero T
		return zero
	}
}

// isClosed reports whether c is closed, without waiting.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
