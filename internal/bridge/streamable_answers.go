package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What an HTTP upstream answers a POST: its messages, or an HTTP error.

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
	err := &HTTPError{Method: req.Method, URL: c.shown, Status: printable(resp.Status), Body: excerpt(body)}
	if resp.StatusCode == http.StatusNotFound && session != "" {
		err.Note = "the server no longer knows session " + strconv.Quote(session)
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

// printable is the server's text with its control characters dropped, for
// a message on a terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
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
		c.listed(r)
	}
	select {
	case c.incoming <- msg:
		return true
	case <-c.done:
		return false
	}
}

// listed learns the param headers of the tools a tools/list result lists.
func (c *httpConn) listed(r *jsonrpc.Response) {
	c.mu.Lock()
	listing := c.listing[r.ID]
	delete(c.listing, r.ID)
	c.mu.Unlock()
	if listing && r.Error == nil {
		c.learnTools(r.Result)
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
