package bridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"
)

// The event streams of an HTTP upstream: a POST's answer, and the
// standalone GET stream for server-initiated messages.

// Reconnection of a broken stream: the first wait unless the server said
// otherwise (an event's retry field, capped too), doubled after each
// failure up to the cap, and the failures in a row after which the stream
// is given up.
const (
	reconnectFirst    = 250 * time.Millisecond
	reconnectCap      = 10 * time.Second
	reconnectFailures = 5
)

// follow reads a stream until it is done, and reconnects it with a GET when
// it breaks: a call's stream (body of its POST) until the call's response,
// resuming it only when the server gave its events ids; the standalone
// stream (call nil, opened here) until the connection closes, resuming from
// the last event id it saw, if any. A server that offers no standalone
// stream (405) is fine: its messages then come only on POST answers.
func (c *httpConn) follow(body io.ReadCloser, call *jsonrpc.Request) {
	what := "the stream of server messages"
	if call != nil {
		what = "the answer to " + call.Method
	}
	s := &stream{opened: body != nil}
	failures := 0
	for {
		if body != nil {
			started := time.Now()
			err := c.readEvents(body, call, s)
			_ = body.Close()
			body = nil
			switch {
			case s.answered || c.ctx.Err() != nil || errors.Is(err, errClosed):
				return
			case err != nil && !isBreak(err):
				c.fail(fmt.Errorf("%s from %s: %w", what, c.shown, err))
				return
			case call != nil && s.lastID == "":
				c.unanswered(call) // nothing to resume from
				return
			}
			if s.progress || time.Since(started) > time.Second {
				failures = 0
			} else {
				failures++
			}
			s.progress = false
		}
		if failures >= reconnectFailures {
			if call != nil {
				c.unanswered(call)
				return
			}
			c.fail(fmt.Errorf("%s from %s broke %d times in a row", what, c.shown, failures))
			return
		}
		if !c.wait(s.delay(failures)) {
			return
		}
		var again bool
		if body, again = c.reopen(what, call, s); !again {
			return
		}
		if body == nil {
			failures++
		}
	}
}

// reopen GETs a stream again: its body, or nil for a failure worth another
// try; false when there is no going on with it.
func (c *httpConn) reopen(what string, call *jsonrpc.Request, s *stream) (io.ReadCloser, bool) {
	resp, err := c.get(s.lastID)
	switch {
	case c.ctx.Err() != nil:
		if resp != nil {
			_ = resp.Body.Close()
		}
		return nil, false
	case err != nil:
		c.log.Warn("bridge: reconnecting to the MCP server", zap.String("url", c.shown), zap.Error(err))
		return nil, true
	case call == nil && resp.StatusCode == http.StatusMethodNotAllowed:
		_ = resp.Body.Close()
		c.log.Debug("bridge: the MCP server offers no stream for server messages", zap.String("url", c.shown))
		return nil, false
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && !(resp.StatusCode == http.StatusNotFound && c.SessionID() != ""):
		// The server will not (re)open this stream, though the session
		// lives: some say so of the standalone stream with another 4xx
		// than 405, and a call's events may be gone.
		_ = resp.Body.Close()
		c.log.Warn("bridge: the MCP server refused "+what, zap.String("url", c.shown), zap.String("status", resp.Status))
		if call != nil {
			c.unanswered(call)
		}
		return nil, false
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		c.refused(resp.Request, resp, nil)
		_ = resp.Body.Close()
		return nil, false
	case mediaType(resp) != "text/event-stream":
		_ = resp.Body.Close()
		c.fail(fmt.Errorf("GET %s: the server answered with Content-Type %q, not an event stream", c.shown, resp.Header.Get("Content-Type")))
		return nil, false
	}
	return resp.Body, true
}

// isBreak says whether err only broke the stream (the connection dropped),
// so that it may be resumed.
func isBreak(err error) bool {
	return !errors.Is(err, errTooLarge) && !errors.Is(err, errBadMessage)
}

// The first connection waits for nothing.
func (s *stream) delay(failures int) time.Duration {
	if !s.opened {
		s.opened = true
		return 0
	}
	if s.retry > 0 && failures == 0 {
		return s.retry
	}
	d := reconnectFirst
	for range failures {
		d = min(2*d, reconnectCap)
	}
	return d
}

// wait waits d unless the connection closes first.
func (c *httpConn) wait(d time.Duration) bool {
	if d == 0 {
		return c.ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-c.done:
		return false
	}
}

// get opens a stream: the standalone one, or with lastID the rest of the
// stream that event was on.
func (c *httpConn) get(lastID string) (*http.Response, error) {
	req, err := c.request(c.ctx, http.MethodGet, nil, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(headerLastEventID, lastID)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", c.shown, err)
	}
	return resp, nil
}

// stream is what a stream's reader keeps across reconnections.
type stream struct {
	lastID   string        // of the last event that had one
	retry    time.Duration // the server's wait before reconnecting
	answered bool          // the call's response came
	progress bool          // a message came since the last connection
	opened   bool
}

var (
	errTooLarge   = errors.New("a message is too large")
	errBadMessage = errors.New("an event is not a JSON-RPC message")
)

// readEvents reads server-sent events from body and hands their messages
// to Read, until the body ends (nil), breaks (its error), or the call's
// response has come.
func (c *httpConn) readEvents(body io.Reader, call *jsonrpc.Request, s *stream) error {
	lines := bufio.NewScanner(body)
	most := c.max + len("data: \r\n") // a line: one field and the most data
	lines.Buffer(make([]byte, 0, min(64<<10, most)), most)
	var data bytes.Buffer
	event := ""
	for lines.Scan() {
		line := lines.Bytes()
		if len(line) == 0 { // the event is complete
			if err := c.dispatch(event, &data, call, s); err != nil || s.answered {
				return err
			}
			event = ""
			continue
		}
		if line[0] == ':' {
			continue // a comment: keeps the connection alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data.Len()+len(value)+1 > c.max {
				return fmt.Errorf("%w: more than %d bytes", errTooLarge, c.max)
			}
			data.Write(value)
			data.WriteByte('\n')
		case "event":
			event = string(value)
		case "id":
			if sendable(value) { // else it could not go back in Last-Event-ID
				s.lastID = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseInt(string(value), 10, 64); err == nil && ms >= 0 {
				s.retry = min(time.Duration(min(ms, reconnectCap.Milliseconds()))*time.Millisecond, reconnectCap)
			}
		}
	}
	if errors.Is(lines.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("%w: more than %d bytes", errTooLarge, c.max)
	}
	return lines.Err()
}

// sendable says whether an event id can be a header's value: no control
// characters (NUL, line breaks, …).
func sendable(id []byte) bool {
	for _, b := range id {
		if (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// dispatch hands a complete event's message to Read. Events without data
// (which may only carry an id to resume from) and of other types than
// "message" carry none.
func (c *httpConn) dispatch(event string, data *bytes.Buffer, call *jsonrpc.Request, s *stream) error {
	defer data.Reset()
	// An event with an id and empty data primes a reconnection (MCP
	// 2025-11-25): it carries no message.
	if len(bytes.TrimSpace(data.Bytes())) == 0 || (event != "" && event != "message") {
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSuffix(data.Bytes(), []byte("\n")))
	if err != nil {
		return fmt.Errorf("%w: %v", errBadMessage, err)
	}
	s.progress = true
	if r, ok := msg.(*jsonrpc.Response); ok && call != nil && r.ID == call.ID {
		s.answered = true
	}
	if !c.deliver(msg) {
		return errClosed
	}
	return nil
}
