package sse_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
	"go.uber.org/goleak"
)

// handlerOnly hides Hijack from net/http's ResponseWriter but keeps Flush
// and write deadlines, as an HTTP/2 writer does: the stream is served
// through its handler.
type handlerOnly struct{ w http.ResponseWriter }

func (h handlerOnly) Header() http.Header         { return h.w.Header() }
func (h handlerOnly) Write(p []byte) (int, error) { return h.w.Write(p) }
func (h handlerOnly) WriteHeader(code int)        { h.w.WriteHeader(code) }
func (h handlerOnly) Flush()                      { _ = http.NewResponseController(h.w).Flush() }
func (h handlerOnly) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(h.w).SetWriteDeadline(t)
}

func withoutHijack(ts *httptest.Server) {
	next := ts.Config.Handler
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(handlerOnly{w}, r)
	})
}

// withStreamEnd counts the streams WithStreamEnd reports over, the way
// httpapi counts its stream slots.
func withStreamEnd(ended chan<- string) func(ts *httptest.Server) {
	return func(ts *httptest.Server) {
		next := ts.Config.Handler
		ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, sse.WithStreamEnd(r, func() { ended <- r.URL.String() }))
		})
	}
}

// rawStreamBytes subscribes to /event?directory=/p on a raw connection,
// publishes one event with a fixed id, closes the broker and returns every
// byte the server sent until the end of the response, and whether the
// server then closed the connection.
func rawStreamBytes(t *testing.T, server func(*httptest.Server)) (wire string, closed bool) {
	t.Helper()
	h := newHarness(t, harnessConfig{opts: sse.Options{Heartbeat: time.Hour}, server: server})
	conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /event?directory=/p HTTP/1.1\r\nHost: questiond.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	h.waitJoined(t, 1)
	m := sse.Message{Directory: "/p", Event: sse.Event{ID: "evt_0123456789abABCDEFGHIJKLMN", Type: "question.asked", Properties: json.RawMessage(`{"a":"<&>"}`)}}
	if err := h.b.Publish(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := h.b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(patience))
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for !bytes.HasSuffix(got.Bytes(), []byte("\r\n0\r\n\r\n")) {
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("after %q: %v", got.String(), err)
		}
	}
	// Anything more, or the end of the connection?
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	n, err := conn.Read(buf)
	if n > 0 {
		t.Fatalf("bytes after the end of the response: %q", buf[:n])
	}
	return got.String(), errors.Is(err, io.EOF)
}

var (
	dateLine    = regexp.MustCompile(`\r\nDate: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\r\n`)
	connectedID = regexp.MustCompile(`"id":"evt_[0-9a-f]{12}[0-9A-Za-z]{14}","type":"server.connected"`)
)

// A stream on a connection taken over is byte for byte what net/http
// writes for it (but the Date and server.connected's random id): the same
// head, one chunk per frame, the last chunk; then the connection closes,
// where net/http would keep it for another request.
func TestHijackedStreamWritesWhatNetHTTPWrites(t *testing.T) {
	hijacked, hijackedClosed := rawStreamBytes(t, nil)
	served, servedClosed := rawStreamBytes(t, withoutHijack)

	const want = "HTTP/1.1 200 OK\r\n" +
		"Cache-Control: no-cache, no-transform\r\n" +
		"Content-Type: text/event-stream\r\n" +
		"X-Content-Type-Options: nosniff\r\n" +
		"x-accel-buffering: no\r\n" +
		"Date: D\r\n" +
		"Transfer-Encoding: chunked\r\n" +
		"\r\n" +
		"59\r\n" + `data: {"id":"ID","type":"server.connected","properties":{}}` + "\n\n\r\n" +
		"60\r\n" + `data: {"id":"evt_0123456789abABCDEFGHIJKLMN","type":"question.asked","properties":{"a":"<&>"}}` + "\n\n\r\n" +
		"0\r\n\r\n"
	normal := func(wire string) string {
		if !dateLine.MatchString(wire) || !connectedID.MatchString(wire) {
			t.Fatalf("no Date or server.connected in %q", wire)
		}
		wire = dateLine.ReplaceAllString(wire, "\r\nDate: D\r\n")
		return connectedID.ReplaceAllString(wire, `"id":"ID","type":"server.connected"`)
	}
	// The connected id is 26 characters either way, so chunk sizes hold.
	if got := normal(hijacked); got != want {
		t.Errorf("hijacked stream:\n got  %q\n want %q", got, want)
	}
	if got := normal(served); got != want {
		t.Errorf("stream served by its handler:\n got  %q\n want %q", got, want)
	}
	if !hijackedClosed {
		t.Error("the connection of a hijacked stream stayed open after its end")
	}
	if servedClosed {
		t.Error("net/http closed the connection of a stream served by its handler")
	}
}

// A client that asked for Connection: close is told, as net/http tells it.
func TestHijackedStreamSaysConnectionClose(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	s := dialStream(t, h, "/event", "Connection: close")
	s.next(t)
	if !strings.Contains(strings.Join(s.header, "\n"), "Connection: close") {
		t.Fatalf("header %q without Connection: close", s.header)
	}
}

// Streams a ResponseWriter serves without Hijack (as HTTP/2's does) work as
// before, and their end is reported.
func TestStreamWithoutHijackIsServedByItsHandler(t *testing.T) {
	ended := make(chan string, 4)
	h := newHarness(t, harnessConfig{server: func(ts *httptest.Server) {
		withoutHijack(ts)
		withStreamEnd(ended)(ts)
	}})
	s := dialStream(t, h, "/event?directory=/p")
	s.nextEvent(t)
	h.waitJoined(t, 1)
	h.publish(t, "/p", "one", `{}`)
	if e := s.nextLive(t); e.Type != "one" {
		t.Fatalf("got %+v", e)
	}
	s.close()
	await(t, ended, "the end of a stream served by its handler was never reported")
}

// HTTP/1.0 has no chunks: its streams are left to net/http, which ends them
// by closing the connection.
func TestHTTP10StreamIsServedByItsHandler(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(patience))
	if _, err := io.WriteString(conn, "GET /event HTTP/1.0\r\nHost: questiond.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if status, err := br.ReadString('\n'); status != "HTTP/1.0 200 OK\r\n" {
		t.Fatalf("HTTP/1.0: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			break // no chunks: HTTP/1.0 has none
		}
		if strings.HasPrefix(line, "Transfer-Encoding") {
			t.Fatalf("HTTP/1.0 response with %q", line)
		}
	}
}

// A client that hangs up is noticed at once, with no event or heartbeat to
// write: the subscriber leaves and the stream's end is reported, once.
func TestHangUpIsNoticedWithoutWriting(t *testing.T) {
	ended := make(chan string, 4)
	left := make(chan struct{}, 4)
	h := newHarness(t, harnessConfig{
		opts:   sse.Options{Heartbeat: time.Hour},
		setup:  func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
		server: withStreamEnd(ended),
	})
	s := dialStream(t, h, "/event?directory=/p")
	s.nextEvent(t)
	select {
	case <-ended:
		t.Fatal("stream reported over while its client is connected")
	default:
	}
	s.close()
	await(t, left, "hang-up not noticed")
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after the hang-up", n)
	}
	await(t, ended, "end of stream not reported")
	// Refused streams are reported over too.
	if err := h.b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := dialStream(t, h, "/event"); s.status != "HTTP/1.1 503 Service Unavailable" {
		t.Fatalf("after close: %s", s.status)
	}
	await(t, ended, "end of a refused stream not reported")
	if len(ended) != 0 {
		t.Fatalf("a stream's end reported twice")
	}
}

// A client that sends anything after its request is not an event stream
// client: its stream is closed.
func TestClientSendingDataIsClosed(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: sse.Options{Heartbeat: time.Hour}})
	s := dialStream(t, h, "/event")
	s.next(t)
	if _, err := io.WriteString(s.conn, "GET /event HTTP/1.1\r\nHost: questiond.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.waitEnd(t); err == nil {
		t.Fatal("stream ended with its last chunk; want the connection closed")
	}
	// The subscriber leaves the broker just after closing the connection.
	h.waitSubscribers(t, 0)
}

// An idle subscriber holds one goroutine, its reader: not its handler, not
// net/http's connection goroutines. A burst of events starts a writer per
// subscriber, which is gone once the burst is out.
func TestIdleSubscriberHoldsOneGoroutine(t *testing.T) {
	const n = 50
	h := newHarness(t, harnessConfig{opts: sse.Options{Heartbeat: time.Hour}})
	idle := func() int {
		// Goroutines ending (a writer after its burst, net/http's after
		// the handler returned) take a moment to be gone.
		deadline := time.Now().Add(patience)
		last := runtime.NumGoroutine()
		for time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			now := runtime.NumGoroutine()
			if now == last {
				return now
			}
			last = now
		}
		return last
	}
	base := idle()
	conns := make([]*bufio.Reader, n)
	for i := range n {
		conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(patience))
		if _, err := io.WriteString(conn, "GET /event?directory=/p HTTP/1.1\r\nHost: questiond.test\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		conns[i] = bufio.NewReader(conn)
	}
	h.waitJoined(t, n)
	readFrame := func(br *bufio.Reader, typ string) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(line, "data: ") {
				if !strings.Contains(line, `"type":"`+typ+`"`) {
					t.Fatalf("got %q, want %s", line, typ)
				}
				return
			}
		}
	}
	for _, br := range conns {
		readFrame(br, "server.connected")
	}
	if got := idle() - base; got > n+5 {
		t.Fatalf("%d idle subscribers hold %d goroutines", n, got)
	}
	for i := range 3 {
		h.publish(t, "/p", fmt.Sprint("burst", i), `{}`)
	}
	for _, br := range conns {
		for i := range 3 {
			readFrame(br, fmt.Sprint("burst", i))
		}
	}
	if got := idle() - base; got > n+5 {
		t.Fatalf("after a burst, %d idle subscribers hold %d goroutines", n, got)
	}
}

// Closing the broker while a hijacked client does not read cuts it off when
// ctx ends: its connection is closed and nothing of it is left.
func TestCloseContextEndCutsOffHijackedStreams(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	left := make(chan struct{}, 4)
	h := newHarness(t, harnessConfig{
		opts:  sse.Options{WriteTimeout: time.Hour, CloseGrace: time.Hour, QueueLength: 1000, Heartbeat: time.Hour},
		setup: func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
	})
	dialStalled(t, h, "/event?directory=/p")
	h.waitJoined(t, 1)
	for i := range 100 { // far more than the socket buffers take
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := h.b.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v, want the context's end", err)
	}
	await(t, left, "the cut-off stream never ended")
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers", n)
	}
	h.ts.Close()
	goleak.VerifyNone(t, ignore)
}

// A stream cut off between its registration and the takeover of its
// connection ends at once: no response, the connection closed, nothing
// left behind.
func TestCutOffWhileConnectingClosesTheConnection(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	left := make(chan struct{}, 1)
	var h *harness
	h = newHarness(t, harnessConfig{setup: func(b *sse.Broker) {
		b.SetHooks(func() {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the subscriber is registered: Close can only cut it off
			if err := b.Close(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("close: %v", err)
			}
		}, func() { left <- struct{}{} })
	}})
	conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(patience))
	if _, err := io.WriteString(conn, "GET /event HTTP/1.1\r\nHost: questiond.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(conn); len(got) != 0 || err != nil {
		t.Fatalf("read %q, %v; want the connection closed without a response", got, err)
	}
	await(t, left, "the stream never ended")
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers", n)
	}
	h.ts.Close()
	goleak.VerifyNone(t, ignore)
}
