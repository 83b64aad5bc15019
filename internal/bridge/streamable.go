package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// The upstream over Streamable HTTP. The go-sdk's StreamableClientTransport
// learns the negotiated protocol version, and opens its stream for
// server-initiated messages, only when the SDK's own Client tells it the
// session is initialized; the relay has no Client, so it reaches an HTTP
// upstream with this transport, which watches the initialize result pass
// through it instead.

// DefaultMaxMessageBytes bounds one message read from an HTTP upstream (a
// JSON body or one event of a stream), as the go-sdk bounds its own.
const DefaultMaxMessageBytes = 16 << 20

// closeTimeout bounds the DELETE of the session on Close.
const closeTimeout = 5 * time.Second

// StreamableHTTP is an upstream MCP server at URL over Streamable HTTP.
type StreamableHTTP struct {
	URL string
	// Header is sent with every request (an Authorization for the upstream,
	// say). It is the upstream's own: questiond's token never goes here.
	Header http.Header
	// Client makes the requests; nil means a client of the connection's own.
	Client *http.Client
	// MaxMessageBytes bounds each message read; 0 means
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	Logger          *zap.Logger
}

// Connect returns the connection; nothing is sent until its first Write.
func (t *StreamableHTTP) Connect(context.Context) (mcp.Connection, error) {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the MCP server's URL %q is not an http or https URL", t.URL)
	}
	c := &httpConn{
		url: u.String(), shown: u.Redacted(), header: t.Header.Clone(), client: t.Client,
		max: t.MaxMessageBytes, log: t.Logger,
		incoming: make(chan jsonrpc.Message), done: make(chan struct{}), failed: make(chan struct{}),
		initializing: map[jsonrpc.ID]bool{}, listing: map[jsonrpc.ID]bool{}, params: map[string][]paramBinding{},
	}
	if c.client == nil {
		c.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		c.ownClient = true
	}
	if c.max <= 0 {
		c.max = DefaultMaxMessageBytes
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// httpConn is one MCP session with an HTTP upstream. Every message written
// is a POST of its own; what the server sends (the POST's JSON or event
// stream, and the standalone GET stream) comes out of Read in the order it
// arrives.
type httpConn struct {
	url, shown string // shown: url without a password, for messages
	header     http.Header
	client     *http.Client
	ownClient  bool // made by Connect: Close closes its idle connections
	max        int
	log        *zap.Logger

	ctx      context.Context // the connection's: Close cancels it
	cancel   context.CancelFunc
	incoming chan jsonrpc.Message
	done     chan struct{} // closed by Close
	closing  sync.Once
	work     sync.WaitGroup // the goroutines reading responses and streams; added to under mu while !closed

	failing sync.Once
	failed  chan struct{} // closed with failure set: Read returns it
	failure error

	mu           sync.Mutex
	session      string                    // Mcp-Session-Id, from the initialize response
	protocol     string                    // from the initialize result
	initializing map[jsonrpc.ID]bool       // initialize requests waiting for their result
	listing      map[jsonrpc.ID]bool       // tools/list requests waiting for theirs
	params       map[string][]paramBinding // tool name → the arguments it wants in headers
	listening    bool                      // the standalone stream was started
	closed       bool                      // by Close: no more work starts
	sessionGone  bool                      // the server said it no longer knows the session
}

func (c *httpConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Read returns the next message from the server, the error that broke the
// connection, or io.EOF once it is closed.
func (c *httpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-c.failed:
		return nil, c.failure
	default:
	}
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.failed:
		return nil, c.failure
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write POSTs msg and returns once the request is on the wire, so that
// messages reach the server in the order they were written; the response
// is read in the background and its messages come out of Read. A failed
// exchange (a refused connection, an HTTP error) breaks the connection and
// is what Read returns, since the reply to a call arrives there too.
func (c *httpConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.failed:
		return c.failure
	case <-c.done:
		return fmt.Errorf("the connection to the MCP server at %s is closed", c.shown)
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message for the MCP server: %w", err)
	}
	var call *jsonrpc.Request
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		call = req
	}
	reqCtx, cancelReq := context.WithCancel(c.ctx)
	wrote := make(chan error, 1)
	signal := func(err error) {
		select {
		case wrote <- err:
		default:
		}
	}
	reqCtx = httptrace.WithClientTrace(reqCtx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) { signal(info.Err) },
	})
	req, err := c.request(reqCtx, http.MethodPost, bytes.NewReader(data), msg)
	if err != nil {
		cancelReq()
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	if c.closed { // Close may be waiting for the work already
		c.mu.Unlock()
		cancelReq()
		return fmt.Errorf("the connection to the MCP server at %s is closed", c.shown)
	}
	if call != nil {
		switch call.Method {
		case methodInitialize:
			c.initializing[call.ID] = true
		case methodListTools:
			c.listing[call.ID] = true
		}
	}
	c.work.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.work.Done()
		defer cancelReq()
		c.post(req, call, signal)
	}()
	select {
	case <-wrote:
		return nil // a failure to send is reported by Read
	case <-ctx.Done():
		cancelReq()
		return ctx.Err()
	case <-c.done:
		return fmt.Errorf("the connection to the MCP server at %s is closed", c.shown)
	}
}

// Close ends the session on the server (DELETE, when it gave one) and
// stops reading.
func (c *httpConn) Close() error {
	var err error
	c.closing.Do(func() {
		close(c.done)
		err = c.deleteSession()
		c.cancel()
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.work.Wait()
		if c.ownClient {
			c.client.CloseIdleConnections()
		}
	})
	return err
}

func (c *httpConn) deleteSession() error {
	c.mu.Lock()
	session, gone := c.session, c.sessionGone
	c.mu.Unlock()
	if session == "" || gone {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	req, err := c.request(ctx, http.MethodDelete, nil, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("ending session %s at %s: %w", session, c.shown, err)
	}
	_ = resp.Body.Close()
	return nil
}

func (c *httpConn) fail(err error) {
	c.failing.Do(func() {
		c.failure = err
		close(c.failed)
	})
}

// errClosed: reading stopped because the connection closed.
var errClosed = errors.New("closed")
