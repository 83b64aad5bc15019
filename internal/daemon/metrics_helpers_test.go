package daemon_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testkit"
)

// stallListener hands out connections whose writes block, for the clients
// a test marks as stalled: a client that stopped reading, without filling
// megabytes of socket buffers first. A blocked write returns once a
// deadline in the past is set, as a real write would.
type stallListener struct {
	net.Listener
	mu      sync.Mutex
	stalled map[string]bool // client addresses
}

func newStallListener(t *testing.T) *stallListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &stallListener{Listener: ln, stalled: map[string]bool{}}
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, l: l, unblock: make(chan struct{})}, nil
}

// stall marks the client at addr; its connection's writes block from its
// first one on, which comes after the request the client sends next.
func (l *stallListener) stall(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stalled[addr] = true
}

func (l *stallListener) isStalled(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stalled[addr]
}

type stallConn struct {
	net.Conn
	l       *stallListener
	once    sync.Once
	unblock chan struct{}
}

func (c *stallConn) Write(p []byte) (int, error) {
	if !c.l.isStalled(c.RemoteAddr().String()) {
		return c.Conn.Write(p)
	}
	<-c.unblock
	return 0, os.ErrDeadlineExceeded
}

func (c *stallConn) expire(t time.Time) {
	if !t.IsZero() && !t.After(time.Now()) {
		c.once.Do(func() { close(c.unblock) })
	}
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.expire(t)
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.expire(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) Close() error {
	c.once.Do(func() { close(c.unblock) })
	return c.Conn.Close()
}

// scrape reads the metrics: every sample by its name with labels, as
// written ("questiond_x{a=\"b\"}"), and the whole text.
func scrape(t *testing.T, url string) (map[string]float64, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %v\n%s", resp.StatusCode, err, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("scrape Content-Type %q, want the Prometheus text format", ct)
	}
	samples := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples, string(body)
}

// labelValues returns every label value in a scrape, by label name.
func labelValues(text string) map[string][]string {
	out := map[string][]string{}
	for line := range strings.SplitSeq(text, "\n") {
		open := strings.IndexByte(line, '{')
		if open < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		labels := line[open+1 : strings.LastIndexByte(line, '}')]
		for pair := range strings.SplitSeq(labels, `",`) {
			name, value, _ := strings.Cut(pair, `="`)
			out[name] = append(out[name], strings.TrimSuffix(value, `"`))
		}
	}
	return out
}

// sseEvent is one event of an /event stream: its type and question id.
type sseEvent struct {
	Type       string `json:"type"`
	Properties struct {
		ID        string `json:"id"`
		RequestID string `json:"requestID"`
	} `json:"properties"`
}

// readEvents sends every event of body to the returned channel until body
// is closed.
func readEvents(body io.ReadCloser) <-chan sseEvent {
	return testkit.Events[sseEvent](body, 64)
}

func nextEvent(t *testing.T, events <-chan sseEvent, typ string) sseEvent {
	t.Helper()
	return testkit.Next(t, events, 10*time.Second, typ+" event", func(e sseEvent) bool { return e.Type == typ })
}

// eventually polls cond until it holds, for state that settles on another
// goroutine (a stream leaving after its cut-off).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
