package sse_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// pipeWriter is an in-process ResponseWriter whose connection can be taken
// over, as net/http's can: Hijack hands over one end of a net.Pipe, whose
// blocking and deadlines follow a synctest bubble's fake time.
type pipeWriter struct {
	header http.Header
	conn   net.Conn
}

func (p *pipeWriter) Header() http.Header { return p.header }
func (p *pipeWriter) WriteHeader(int) {
	panic("response written through the ResponseWriter of a hijacked stream")
}
func (p *pipeWriter) Write([]byte) (int, error) {
	panic("response written through the ResponseWriter of a hijacked stream")
}
func (p *pipeWriter) Flush() {}
func (p *pipeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return p.conn, bufio.NewReadWriter(bufio.NewReader(p.conn), bufio.NewWriter(p.conn)), nil
}

// pipeClient is the client end of a pipeWriter's connection. It reads
// whenever it is not paused and keeps every byte.
type pipeClient struct {
	conn net.Conn

	mu     sync.Mutex
	got    strings.Builder
	end    error // why reading stopped, once it has
	paused chan struct{}
}

// servePiped serves directory's stream to a new pipeClient, the way
// net/http runs a handler; done is closed once the handler returned.
func servePiped(b *sse.Broker, directory string, reading bool) (c *pipeClient, done <-chan struct{}) {
	server, client := net.Pipe()
	c = &pipeClient{conn: client, paused: make(chan struct{})}
	if reading {
		close(c.paused)
	}
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		r := httptest.NewRequest(http.MethodGet, "/event", nil)
		b.ServeEvent(&pipeWriter{header: http.Header{}, conn: server}, r, directory, sse.Standard, nil)
	}()
	go c.read()
	return c, handled
}

func (c *pipeClient) read() {
	<-c.paused
	buf := make([]byte, 1024)
	for {
		n, err := c.conn.Read(buf)
		c.mu.Lock()
		c.got.Write(buf[:n])
		if err != nil {
			c.end = err
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// types returns the event types received so far, and whether the response
// ended with its last chunk.
func (c *pipeClient) types(t *testing.T) (types []string, last bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	wire := c.got.String()
	for _, line := range strings.Split(wire, "\n") {
		if _, rest, ok := strings.Cut(line, `"type":"`); ok {
			typ, _, _ := strings.Cut(rest, `"`)
			types = append(types, typ)
		}
	}
	return types, strings.HasSuffix(wire, "\r\n0\r\n\r\n")
}

func (c *pipeClient) ended() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end
}

// A publisher that queues while the stream's writer is parking starts the
// next writer; the one parking writes nothing more. Every event arrives, in
// order, and the handler returned with the prelude out.
func TestPublishWhileTheWriterParks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := sse.New(sse.Options{Heartbeat: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		left := make(chan struct{}, 1)
		b.SetHooks(nil, func() { left <- struct{}{} })
		hold := make(chan struct{})
		var parks atomic.Int32
		b.SetParkHook(func() {
			if parks.Add(1) == 1 {
				<-hold // the handler, parking after the prelude
			}
		})
		c, handled := servePiped(b, "/p", true)
		synctest.Wait()
		if parks.Load() != 1 {
			t.Fatalf("%d parks, want the handler parking", parks.Load())
		}
		if err := b.Publish(context.Background(), msg("/p", "e1")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got, _ := c.types(t); !slices.Equal(got, []string{"server.connected", "e1"}) {
			t.Fatalf("while the handler parks: got %q", got)
		}
		close(hold)
		<-handled
		if err := b.Publish(context.Background(), msg("/p", "e2")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if parks.Load() != 3 {
			t.Fatalf("%d parks, want one per writer (3)", parks.Load())
		}
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-left
		synctest.Wait()
		got, last := c.types(t)
		if !slices.Equal(got, []string{"server.connected", "e1", "e2"}) || !last {
			t.Fatalf("got %q, last chunk %v", got, last)
		}
		if err := c.ended(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last chunk: %v, want the connection closed", err)
		}
	})
}

// A hijacked stream whose client stops reading is cut off at the write
// timeout, exactly, without its handler: the reader ends the stream.
func TestHijackedStreamIsCutOffAtTheWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 3 * time.Second
		b, err := sse.New(sse.Options{Heartbeat: time.Hour, WriteTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		left := make(chan struct{}, 1)
		b.SetHooks(nil, func() { left <- struct{}{} })
		c, handled := servePiped(b, "/p", false)
		// The head and server.connected are stuck in the pipe: the handler
		// is the writer until they are out, or cut off.
		synctest.Wait()
		select {
		case <-handled:
			t.Fatal("the handler returned with its first frame unwritten")
		default:
		}
		start := time.Now()
		<-left
		if d := time.Since(start); d != timeout {
			t.Fatalf("cut off after %v, want %v", d, timeout)
		}
		<-handled
		if n := b.Subscribers(); n != 0 {
			t.Fatalf("%d subscribers", n)
		}
		close(c.paused)
		synctest.Wait()
		if got, _ := c.types(t); len(got) != 0 {
			t.Fatalf("a cut-off client got %q", got)
		}
		if err := c.ended(); !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
			t.Fatalf("connection after the cut-off: %v", err)
		}
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
