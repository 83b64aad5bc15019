package bridge_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testserver"
)

// questiond runs a real questiond for the test and returns its URL and a
// client of it, as the bridge's agent.
func questiond(t *testing.T) (string, *client.Client) {
	t.Helper()
	server := testkit.Serve(t, testserver.Config{
		Events:      sse.Options{Heartbeat: time.Hour},
		Logger:      zaptest.NewLogger(t),
		DatabaseURL: testkit.DatabaseURL(t),
	})
	return server.URL, testkit.Agent(t, server.URL, "")
}

// recorder keeps the messages written on a connection, as JSON.
type recorder struct {
	mcp.Connection
	mu      sync.Mutex
	written []string
}

func (r *recorder) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, _ := jsonrpc.EncodeMessage(msg)
	r.mu.Lock()
	r.written = append(r.written, string(data))
	r.mu.Unlock()
	return r.Connection.Write(ctx, msg)
}

func (r *recorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.written...)
}

// rig is a host, a relay and an upstream.
type rig struct {
	finished   chan struct{} // closed when Run has returned runErr
	runErr     error
	toUpstream interface{ messages() []string } // what the relay wrote to the upstream
	upstream   mcp.Connection
}

// relay starts a relay between a host's and an upstream's transports: the
// relay's ends are its own stdio connections over pipes, as `questiond
// bridge` runs it, and the test's ends the SDK's.
func relay(t *testing.T, opts bridge.Options) (hostEnd, upstreamEnd mcp.Transport, r *rig) {
	t.Helper()
	hostEnd, hc := stdioPair(t, nil)
	seen := &lines{}
	upstreamEnd, uc := stdioPair(t, seen)
	r = &rig{finished: make(chan struct{}), toUpstream: seen, upstream: uc}
	opts.Logger = zaptest.NewLogger(t)
	go func() {
		defer close(r.finished)
		r.runErr = bridge.New(hc, uc, opts).Run(context.Background())
	}()
	t.Cleanup(func() {
		_ = hc.Close()
		<-r.finished
	})
	return hostEnd, upstreamEnd, r
}

// stdioPair joins the relay's stdio connection (a bridge.StdioTransport's)
// to an end for the test (an mcp.IOTransport) over two pipes; seen, if not
// nil, gets what the relay writes.
func stdioPair(t *testing.T, seen io.Writer) (mcp.Transport, mcp.Connection) {
	t.Helper()
	toRelay, fromTest, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toTest, fromRelay, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out io.WriteCloser = fromRelay
	if seen != nil {
		out = teeCloser{io.MultiWriter(fromRelay, seen), fromRelay}
	}
	conn, err := (&bridge.StdioTransport{Reader: toRelay, Writer: out}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return &mcp.IOTransport{Reader: toTest, Writer: fromTest}, conn
}

type teeCloser struct {
	io.Writer
	io.Closer
}

// lines keeps what is written, a message a write.
type lines struct {
	mu      sync.Mutex
	written []string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.written = append(l.written, strings.TrimSuffix(string(p), "\n"))
	l.mu.Unlock()
	return len(p), nil
}

func (l *lines) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.written...)
}

// ended waits for Run's return.
func (r *rig) ended(t *testing.T) error {
	t.Helper()
	select {
	case <-r.finished:
		return r.runErr
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not end")
		return nil
	}
}

// serve connects server to the upstream end. Calling the returned func
// cuts the server's connection, as its process exiting would.
func serve(t *testing.T, server *mcp.Server, upstreamEnd mcp.Transport) (cut func()) {
	t.Helper()
	kept := &keptTransport{Transport: upstreamEnd}
	ss, err := server.Connect(t.Context(), kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return func() { _ = kept.conn.Close() }
}

// keptTransport keeps the connection it made.
type keptTransport struct {
	mcp.Transport
	conn mcp.Connection
}

func (k *keptTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.conn = c
	return c, err
}

// host connects a host that declares opts' capabilities to the host end.
func host(t *testing.T, hostEnd mcp.Transport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, opts).
		Connect(t.Context(), hostEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// deploySchema is written out of alphabetical order: the operator must see
// it, and the upstream get its content, in this order.
var deploySchema = json.RawMessage(`{"type":"object","properties":{` +
	`"target":{"type":"string","title":"Target","oneOf":[{"const":"stg","title":"Staging"},{"const":"prd","title":"Production"}]},` +
	`"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":5},` +
	`"confirm":{"type":"boolean","title":"Confirm"},` +
	`"note":{"type":"string","title":"Note","default":"none"}},` +
	`"required":["target","replicas","confirm"]}`)

// rigUp is a questiond watched by an operator, and a relay that asks it as
// opts say (its Asker and Server filled in).
func rigUp(t *testing.T, opts bridge.Options) (base string, ops *testkit.Operator, hostEnd, upstreamEnd mcp.Transport, r *rig) {
	t.Helper()
	base, c := questiond(t)
	ops = testkit.Watch(t, base)
	opts.Asker, opts.Server = c, base
	hostEnd, upstreamEnd, r = relay(t, opts)
	return base, ops, hostEnd, upstreamEnd, r
}
