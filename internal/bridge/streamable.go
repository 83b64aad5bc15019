package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
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

// Header names of the Streamable HTTP transport.
const (
	headerSession     = "Mcp-Session-Id"
	headerProtocol    = "MCP-Protocol-Version"
	headerMethod      = "Mcp-Method" // protocol 2026-07-28 (SEP-2243)
	headerName        = "Mcp-Name"
	headerLastEventID = "Last-Event-ID"
)

// statelessProtocol is the first protocol version without the standalone
// GET stream, and the first whose requests name their method in headers.
const statelessProtocol = "2026-07-28"

// Reconnection of a broken stream: the first wait unless the server said
// otherwise (an event's retry field), doubled after each failure up to the
// cap, and the failures in a row after which the connection fails.
const (
	reconnectFirst    = 250 * time.Millisecond
	reconnectCap      = 10 * time.Second
	reconnectFailures = 5
	// closeTimeout bounds the DELETE of the session on Close.
	closeTimeout = 5 * time.Second
)

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
		initializing: map[jsonrpc.ID]bool{},
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
	session      string              // Mcp-Session-Id, from the initialize response
	protocol     string              // from the initialize result
	initializing map[jsonrpc.ID]bool // initialize requests waiting for their result
	listening    bool                // the standalone stream was started
	closed       bool                // by Close: no more work starts
	sessionGone  bool                // the server said it no longer knows the session
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
	if call != nil && call.Method == methodInitialize {
		c.initializing[call.ID] = true
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

// request is an HTTP request to the server with the headers every request
// carries: the configured ones, the session and the protocol version, and
// on protocol 2026-07-28 the method and name of msg.
func (c *httpConn) request(ctx context.Context, method string, body io.Reader, msg jsonrpc.Message) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, body)
	if err != nil {
		return nil, fmt.Errorf("a request to the MCP server at %s: %w", c.shown, err)
	}
	for k, vs := range c.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	c.mu.Lock()
	session, protocol := c.session, c.protocol
	c.mu.Unlock()
	r, _ := msg.(*jsonrpc.Request)
	if v := requestProtocol(r); v != "" {
		protocol = v // a 2026-07-28 request names its own
	}
	if protocol != "" {
		req.Header.Set(headerProtocol, protocol)
	}
	if session != "" {
		req.Header.Set(headerSession, session)
	}
	if r != nil && protocol >= statelessProtocol {
		req.Header.Set(headerMethod, r.Method)
		if name, ok := requestName(r); ok {
			req.Header.Set(headerName, headerValue(name))
		}
	}
	return req, nil
}

// post sends one message and hands what the server answers to Read.
func (c *httpConn) post(req *http.Request, call *jsonrpc.Request, wrote func(error)) {
	resp, err := c.client.Do(req)
	wrote(err)
	if err != nil {
		if req.Context().Err() == nil { // not abandoned by Write's caller or Close
			c.fail(fmt.Errorf("POST %s: %w", c.shown, err))
		}
		return
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		_ = resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		c.refused(req, resp, call)
		return
	}
	if !c.keepSession(resp) || call == nil {
		return // a notification or a response: 202, nothing to read
	}
	switch mediaType(resp) {
	case "application/json":
		c.readJSON(resp.Body, call)
	case "text/event-stream":
		c.follow(resp.Body, call)
	default:
		c.fail(fmt.Errorf("POST %s: the server answered %s with Content-Type %q, not JSON or an event stream",
			c.shown, call.Method, resp.Header.Get("Content-Type")))
	}
}

// refused handles an HTTP error. A call refused with 400 and a JSON-RPC
// error in the body gets that error as its response, as a server answers a
// call it cannot take; every other error ends the connection, naming the
// status, the URL and the start of the body.
func (c *httpConn) refused(req *http.Request, resp *http.Response, call *jsonrpc.Request) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if call != nil && resp.StatusCode == http.StatusBadRequest {
		if m, err := jsonrpc.DecodeMessage(body); err == nil {
			if r, ok := m.(*jsonrpc.Response); ok && r.Error != nil {
				c.deliver(&jsonrpc.Response{ID: call.ID, Error: r.Error})
				return
			}
		}
	}
	c.mu.Lock()
	session := c.session
	if resp.StatusCode == http.StatusNotFound && session != "" {
		c.sessionGone = true // nothing left to DELETE
	}
	c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	err := &HTTPError{Method: req.Method, URL: c.shown, Status: resp.Status, Body: excerpt(body)}
	if resp.StatusCode == http.StatusNotFound && session != "" {
		err.Note = "the server no longer knows session " + session
	}
	c.fail(err)
}

// HTTPError is an HTTP error from the upstream that ended the connection.
type HTTPError struct {
	Method, URL, Status string
	Body                string // its start
	Note                string // what it means, when known
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("the MCP server at %s answered %s with %s", e.URL, e.Method, e.Status)
	if e.Note != "" {
		msg += " (" + e.Note + ")"
	}
	if e.Body != "" {
		msg += fmt.Sprintf(": %q", e.Body)
	}
	return msg
}

// excerpt is the start of an error body, for a message.
func excerpt(body []byte) string {
	const most = 300
	b := bytes.TrimSpace(body)
	if len(b) > most {
		return string(b[:most]) + "…"
	}
	return string(b)
}

// keepSession keeps the session id the server gave, and reports whether
// the connection can go on: a server may not change it.
func (c *httpConn) keepSession(resp *http.Response) bool {
	id := resp.Header.Get(headerSession)
	if id == "" {
		return true
	}
	c.mu.Lock()
	had := c.session
	if had == "" {
		c.session = id
	}
	c.mu.Unlock()
	if had != "" && had != id {
		c.fail(fmt.Errorf("the MCP server at %s changed its session id from %q to %q", c.shown, had, id))
		return false
	}
	return true
}

func mediaType(resp *http.Response) string {
	t, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return t
}

// readJSON reads a call's JSON response (a message, or a batch of them).
func (c *httpConn) readJSON(body io.Reader, call *jsonrpc.Request) {
	data, err := io.ReadAll(io.LimitReader(body, int64(c.max)+1))
	if err != nil {
		c.fail(fmt.Errorf("reading the answer to %s from %s: %w", call.Method, c.shown, err))
		return
	}
	if len(data) > c.max {
		c.fail(fmt.Errorf("the MCP server at %s answered %s with more than %d bytes", c.shown, call.Method, c.max))
		return
	}
	var batch []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
		if err := json.Unmarshal(data, &batch); err != nil {
			c.fail(fmt.Errorf("the MCP server at %s answered %s with invalid JSON: %w", c.shown, call.Method, err))
			return
		}
	} else {
		batch = []json.RawMessage{data}
	}
	answered := false
	for _, raw := range batch {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			c.fail(fmt.Errorf("the MCP server at %s answered %s with %w", c.shown, call.Method, err))
			return
		}
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == call.ID {
			answered = true
		}
		if !c.deliver(msg) {
			return
		}
	}
	if !answered {
		c.unanswered(call)
	}
}

// unanswered gives a call whose answer the server will never send an error
// response, so that the host is not left waiting.
func (c *httpConn) unanswered(call *jsonrpc.Request) {
	if c.ctx.Err() != nil {
		return
	}
	c.deliver(&jsonrpc.Response{ID: call.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("the MCP server at %s ended the answer to %s without a response", c.shown, call.Method)}})
}

// deliver hands msg to Read, and reports false when the connection closed
// first. The result of an initialize tells the protocol version; on
// protocols before 2026-07-28 it also opens the stream for
// server-initiated messages.
func (c *httpConn) deliver(msg jsonrpc.Message) bool {
	if r, ok := msg.(*jsonrpc.Response); ok {
		c.initialized(r)
	}
	select {
	case c.incoming <- msg:
		return true
	case <-c.done:
		return false
	}
}

func (c *httpConn) initialized(r *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initializing[r.ID] {
		return
	}
	delete(c.initializing, r.ID)
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.ProtocolVersion == "" {
		return
	}
	c.protocol = res.ProtocolVersion
	if c.listening || c.protocol >= statelessProtocol {
		return
	}
	if c.closed {
		return
	}
	c.listening = true
	c.work.Add(1)
	go func() {
		defer c.work.Done()
		c.follow(nil, nil)
	}()
}

// requestProtocol is the protocol version a 2026-07-28 request carries in
// its _meta ("" for none).
func requestProtocol(r *jsonrpc.Request) string {
	if r == nil {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v)
	return v
}

// requestName is what a 2026-07-28 request's Mcp-Name header names: the
// tool, prompt or resource.
func requestName(r *jsonrpc.Request) (string, bool) {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	switch r.Method {
	case "tools/call", "prompts/get":
		if json.Unmarshal(r.Params, &p) == nil {
			return p.Name, true
		}
	case "resources/read":
		if json.Unmarshal(r.Params, &p) == nil {
			return p.URI, true
		}
	}
	return "", false
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
