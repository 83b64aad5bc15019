package sse_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testenv"
)

// smallSendBuffers makes every accepted connection's send buffer tiny, so a
// client that stops reading wedges the server's writes at once.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// wedgeable is a client connection whose reads stop once wedged: the
// HTTP/2 client's read loop stops taking frames, and the server's writes to
// the connection block.
type wedgeable struct {
	net.Conn
	wedged, closed       chan struct{}
	wedgeOnce, closeOnce sync.Once
}

func newWedgeable(c net.Conn) *wedgeable {
	return &wedgeable{Conn: c, wedged: make(chan struct{}), closed: make(chan struct{})}
}

func (c *wedgeable) Read(p []byte) (int, error) {
	select {
	case <-c.wedged:
		<-c.closed
		return 0, net.ErrClosed
	default:
	}
	return c.Conn.Read(p)
}

func (c *wedgeable) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *wedgeable) wedge() { c.wedgeOnce.Do(func() { close(c.wedged) }) }

// Issue 22, point (c): cutting off a stream on an HTTP/2 connection that
// is wedged (its client stopped reading, the server's writes to the socket
// block) moves the stream's write deadline under the broker's read lock
// from Publish. Not a defect: net/http's HTTP/2 server hands that to its
// connection's serve loop, which never blocks on the socket (frames that do
// not fit its buffer are written by another goroutine), so Publish goes on
// at once and the other streams get every event.
func TestPublishNeverWaitsForAWedgedHTTP2Connection(t *testing.T) {
	testenv.Heavy(t, "25 MB through HTTP: seconds under -race")
	const writeTimeout = time.Minute // the cut-off comes from the full queue, under Publish
	h := newHarness(t, harnessConfig{
		opts: sse.Options{WriteTimeout: writeTimeout, QueueLength: 8, Heartbeat: time.Hour},
		server: func(ts *httptest.Server) {
			ts.Config.Protocols = new(http.Protocols)
			ts.Config.Protocols.SetHTTP1(true)
			ts.Config.Protocols.SetUnencryptedHTTP2(true)
			ts.Listener = smallSendBuffers{ts.Listener}
		},
	})
	var conns []*wedgeable
	var mu sync.Mutex
	tr := &http.Transport{Protocols: new(http.Protocols), DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		w := newWedgeable(c)
		mu.Lock()
		conns = append(conns, w)
		mu.Unlock()
		return w, nil
	}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	// Several streams on one HTTP/2 connection, then the client stops
	// reading it.
	const streams = 4
	for range streams {
		res, err := client.Get(h.ts.URL + "/event?directory=/p")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.ProtoMajor != 2 {
			t.Fatalf("the stream is %s; want HTTP/2", res.Proto)
		}
	}
	h.waitJoined(t, streams)
	// The transport usually carries every stream on one connection, but may
	// have dialled another meanwhile: every connection it opened is wedged.
	mu.Lock()
	all := wedgeables(conns)
	mu.Unlock()
	if len(all) == 0 {
		t.Fatal("no HTTP/2 connection was dialled")
	}
	all.wedge()
	defer all.Close()
	wedged := all

	fast := dialStream(t, h, "/event?directory=/p") // HTTP/1.1, read throughout
	fast.nextEvent(t)
	h.waitJoined(t, 1)

	stuck := time.AfterFunc(writeTimeout/2, func() {
		buf := make([]byte, 1<<20)
		t.Errorf("publishing is stuck behind the wedged HTTP/2 connection:\n%s", buf[:runtime.Stack(buf, true)])
		wedged.Close()
	})
	// The watchdog judges each publish (with the read of one event), not
	// the run, whose 25 MB through the race detector take as long as the
	// machine makes them: one held up by the wedged connection waits for
	// writeTimeout.
	const total, window = 400, 4
	for i := range total {
		stuck.Reset(writeTimeout / 2)
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if i >= window {
			if got := seqOf(t, fast.next(t)); got != i-window {
				t.Fatalf("the reading client got event %d, want %d", got, i-window)
			}
		}
	}
	stuck.Stop()
	// Every stream of the wedged connection was cut off by a Publish that
	// found its queue full. (Their handlers stay blocked in net/http's
	// write until the connection dies: the reset waits behind the wedged
	// frame. That holds a goroutine, not the broker; the daemon closes such
	// a connection with http.HTTP2Config.WriteByteTimeout, see its
	// TestWedgedHTTP2StreamsGiveBackTheirSlots.)
	if got := h.b.Stats().CutOff; got != streams {
		t.Errorf("%d streams cut off; want %d", got, streams)
	}
	wedged.Close()
	h.waitSubscribers(t, 1)
}

// Issue 22, HTTP/2 follow-up: a stream cut off on an HTTP/2 connection
// whose client still reads the connection, but no longer that stream (its
// flow-control window is closed), has its handler return at once: the cut-off
// resets the stream (RST_STREAM is not held by the window) and the write
// waiting for the window fails. The connection and its other stream go on.
// (A connection that takes no byte at all is the server's to close: see
// http.HTTP2Config.WriteByteTimeout, set by the daemon package.)
// wedgeables are the client's connections, wedged and closed together.
type wedgeables []*wedgeable

func (ws wedgeables) wedge() {
	for _, w := range ws {
		w.wedge()
	}
}

func (ws wedgeables) Close() {
	for _, w := range ws {
		_ = w.Close()
	}
}

func TestACutOffHTTP2StreamWithAClosedWindowReturns(t *testing.T) {
	const queue = 8
	h := newHarness(t, harnessConfig{
		opts: sse.Options{WriteTimeout: time.Minute, QueueLength: queue, Heartbeat: time.Hour},
		server: func(ts *httptest.Server) {
			ts.Config.Protocols = new(http.Protocols)
			ts.Config.Protocols.SetUnencryptedHTTP2(true)
		},
	})
	tr := &http.Transport{Protocols: new(http.Protocols), HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	open := func() *http.Response {
		t.Helper()
		res, err := client.Get(h.ts.URL + "/event?directory=/p")
		if err != nil {
			t.Fatal(err)
		}
		if res.ProtoMajor != 2 {
			t.Fatalf("the stream is %s; want HTTP/2", res.Proto)
		}
		return res
	}
	unread := open() // never read: its window closes after 64 KiB
	defer unread.Body.Close()
	read := open()
	defer read.Body.Close()
	h.waitJoined(t, 2)
	frames := bufio.NewReaderSize(read.Body, 1<<20)
	nextData := func() string {
		t.Helper()
		for {
			line, err := frames.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream that reads ended: %v", err)
			}
			if strings.HasPrefix(line, "data: ") {
				return line
			}
		}
	}
	nextData() // server.connected

	for i := range 4 * queue {
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if got := seqOf(t, nextData()); got != i {
			t.Fatalf("the reading stream got event %d, want %d", got, i)
		}
	}
	if got := h.b.Stats().CutOff; got != 1 {
		t.Fatalf("%d streams cut off; want the unread one", got)
	}
	h.waitSubscribers(t, 1) // the unread stream's handler returned
	if _, err := io.Copy(io.Discard, unread.Body); err == nil {
		t.Error("the cut-off stream ended cleanly; want it reset")
	}
}
