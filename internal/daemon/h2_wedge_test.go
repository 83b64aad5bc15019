package daemon_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
)

// Issue 22, HTTP/2 follow-up: an operator's event streams on an HTTP/2
// connection whose client stopped reading are cut off by the broker; their
// handlers must then return and give back their --max-streams slots, even
// though the connection's socket takes no byte (the stream reset the
// cut-off sends waits behind the blocked frame). Otherwise a wedged client
// keeps every operator's /event at 503 until the connection dies.
func TestWedgedHTTP2StreamsGiveBackTheirSlots(t *testing.T) {
	t.Parallel()
	serverTLS, roots := selfSignedTLS(t)
	ln := newWedgeListener(t)
	cfg := config(t)
	cfg.Listener = ln
	cfg.TLS = serverTLS
	// A write timeout long enough for a loaded machine to write the first
	// frames (at 300 ms both streams were dropped before the wedge at load
	// 15); the wedged connection then dies within it plus close_notify's 5 s.
	cfg.Events = sse.Options{Heartbeat: time.Hour, WriteTimeout: 2 * time.Second, QueueLength: 4}
	cfg.API.Auth = httpapi.Auth{OperatorPassword: metricsPassword, AgentTokens: map[string]string{metricsAgent: metricsToken}}
	const slots = 2
	cfg.API.Limits.MaxStreams = slots
	cfg.API.Limits.MaxMCPStreams = 1
	d := running(t, cfg)
	base := "https://" + d.Addr().String()

	// Every operator stream slot, and the agents' one MCP stream slot, taken
	// by streams on one HTTP/2 connection.
	var mu sync.Mutex
	var local []string
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Protocols: new(http.Protocols),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				mu.Lock()
				local = append(local, c.LocalAddr().String())
				mu.Unlock()
			}
			return c, err
		}}
	tr.Protocols.SetHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	open := func(client *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, base+"/event?directory=/p", nil)
		req.SetBasicAuth("opencode", metricsPassword)
		return client.Do(req)
	}
	wedgedClient := &http.Client{Transport: tr}
	for range slots {
		res, err := open(wedgedClient)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.StatusCode != http.StatusOK || res.ProtoMajor != 2 {
			t.Fatalf("operator stream: %d over %s; want 200 over HTTP/2", res.StatusCode, res.Proto)
		}
		nextEvent(t, readEvents(res.Body), "server.connected")
	}
	if status := openMCPStream(t, wedgedClient, base); status != http.StatusOK {
		t.Fatalf("the agent's MCP stream: %d; want 200", status)
	}
	healthy := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer healthy.CloseIdleConnections()
	if status := openMCPStream(t, healthy, base); status != http.StatusServiceUnavailable {
		t.Fatalf("a second MCP stream at --max-mcp-streams 1: %d; want 503", status)
	}
	mu.Lock()
	if len(local) != 1 {
		t.Fatalf("%d connections; want the streams on one", len(local))
	}
	ln.wedge(local[0])
	mu.Unlock()

	// What is published next cannot be written: both streams' queues fill
	// and they are cut off. Each event is larger than the connection's
	// write buffer, so its frames go straight to the socket, which takes
	// nothing.
	pad := strings.Repeat("x", 32<<10)
	for i := range 8 {
		msg := sse.Message{Directory: "/p", Event: sse.Event{Type: "test.event", Properties: json.RawMessage(fmt.Sprintf(`{"seq":%d,"pad":%q}`, i, pad))}}
		if err := d.Bus().Publish(t.Context(), msg); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both wedged streams cut off", func() bool { return d.Bus().Stats().CutOff == slots })

	// Their handlers return and their slots come back: a healthy operator
	// gets a stream (503 while the wedged ones hold every slot).
	// The connection dies once it took no byte for --event-write-timeout,
	// plus up to 5 s in which crypto/tls tries to say close_notify on it.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := open(healthy)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a healthy operator's stream: %d; want 200 (or 503 while the slots are held)", res.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatal("a healthy operator's streams are still refused (503): the wedged streams hold every --max-streams slot")
		}
	}
	eventually(t, "every stream over", func() bool { return d.Bus().Subscribers() == 0 })
	// The MCP stream ended with its connection: its slot is free too.
	if status := openMCPStream(t, healthy, base); status != http.StatusOK {
		t.Fatalf("a healthy agent's MCP stream after the wedged connection died: %d; want 200", status)
	}
}

// openMCPStream begins an MCP session as the agent and opens its event
// stream (GET /mcp), which stays open until the test ends; it returns the
// stream's status.
func openMCPStream(t *testing.T, client *http.Client, base string) int {
	t.Helper()
	do := func(ctx context.Context, method, body string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+metricsToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("MCP initialize: %d", res.StatusCode)
	}
	ids := []string{"Mcp-Session-Id", session, "MCP-Protocol-Version", "2025-06-18"}
	res = do(t.Context(), http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, ids...)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("MCP initialized: %d", res.StatusCode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res = do(ctx, http.MethodGet, "", append(ids, "Accept", "text/event-stream")...)
	t.Cleanup(func() { cancel(); res.Body.Close() })
	return res.StatusCode
}

// selfSignedTLS is a server configuration with a fresh certificate for
// 127.0.0.1, offering HTTP/2 (net/http serves it on a listener of its own
// only when the configuration names "h2"), and the pool that trusts it.
func selfSignedTLS(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	der, key := testkit.SelfSigned(t)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"}}, roots
}

// wedgeListener hands out connections whose writes, once a test wedges
// their client, take no byte: as a socket whose peer stopped reading, a
// write then returns only when its deadline passes (one set before or
// while it waits) or the connection closes.
type wedgeListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[string]*wedgeConn // by client address
}

func newWedgeListener(t *testing.T) *wedgeListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &wedgeListener{Listener: ln, conns: map[string]*wedgeConn{}}
}

func (l *wedgeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	wc := &wedgeConn{Conn: c, changed: make(chan struct{}), closed: make(chan struct{})}
	l.mu.Lock()
	l.conns[c.RemoteAddr().String()] = wc
	l.mu.Unlock()
	return wc, nil
}

func (l *wedgeListener) wedge(client string) {
	l.mu.Lock()
	c := l.conns[client]
	l.mu.Unlock()
	c.mu.Lock()
	c.wedged = true
	c.mu.Unlock()
}

type wedgeConn struct {
	net.Conn
	closeOnce sync.Once
	closed    chan struct{}

	mu       sync.Mutex
	wedged   bool
	deadline time.Time
	changed  chan struct{} // closed and replaced when the deadline moves
}

func (c *wedgeConn) Write(p []byte) (int, error) {
	for {
		c.mu.Lock()
		if !c.wedged {
			c.mu.Unlock()
			return c.Conn.Write(p)
		}
		deadline, changed := c.deadline, c.changed
		c.mu.Unlock()
		var expired <-chan time.Time
		if !deadline.IsZero() {
			timer := time.NewTimer(time.Until(deadline))
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case <-expired:
			return 0, os.ErrDeadlineExceeded
		case <-c.closed:
			return 0, net.ErrClosed
		case <-changed:
		}
	}
}

func (c *wedgeConn) setWriteDeadline(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *wedgeConn) SetDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *wedgeConn) SetWriteDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *wedgeConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
