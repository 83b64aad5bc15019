package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bridge's own stdio connections (newline-delimited JSON-RPC, as the
// SDK's IOTransport and CommandTransport speak it). They hand the relay
// whole frames, so that it can send most messages on with only their id
// rewritten (frame.go), and read on the relay's own goroutine: the SDK's
// connections decode every message into a jsonrpc.Message, encode it
// again, and pass each through a goroutine and a channel, which on a
// two-core machine cost a relayed tool call more than the two extra pipe
// hops do (BENCHMARKS.md). As the Connection they also are, they read and
// write jsonrpc.Messages exactly as the SDK's do, batches included.

// lineConn is one newline-delimited JSON-RPC stream.
type lineConn struct {
	// Reading is the relay's pump's alone: one goroutine reads.
	in     *bufio.Reader
	max    int    // the most bytes of one frame
	acc    []byte // a frame that spans more than one read
	err    error  // the error after the last frame
	queue  []jsonrpc.Message
	frames chan frameOrErr // from a reading goroutine, when reads cannot be interrupted
	out    io.Writer

	writeMu sync.Mutex
	buf     []byte                      // the frame being written
	batches map[jsonrpc.ID]*batchAnswer // a batch's requests → its answer, while any is unanswered

	closer    func() error
	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type frameOrErr struct {
	frame []byte
	err   error
}

// errFrameTooLarge: a frame longer than mcp.DefaultMaxLineLength, which the
// SDK's connections refuse too.
var errFrameTooLarge = fmt.Errorf("a JSON-RPC message is longer than %d bytes", mcp.DefaultMaxLineLength)

// newLineConn reads frames from in and writes them to out; closer closes
// both. Unless in's reads are interrupted by closer (inline), a goroutine
// reads, so that Close can end a Read waiting for input.
func newLineConn(in io.Reader, out io.Writer, inline bool, closer func() error) *lineConn {
	c := &lineConn{in: bufio.NewReaderSize(in, 64<<10), max: mcp.DefaultMaxLineLength, out: out,
		closer: closer, closed: make(chan struct{})}
	if !inline {
		c.frames = make(chan frameOrErr)
		go c.readAhead()
	}
	return c
}

func (c *lineConn) readAhead() {
	for {
		frame, err := c.nextFrame()
		select {
		case c.frames <- frameOrErr{bytes.Clone(frame), err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// readFrame returns the next frame: one JSON value, without the spaces
// and line break around it. It is valid until the next readFrame.
func (c *lineConn) readFrame(ctx context.Context) ([]byte, error) {
	if c.frames != nil {
		select {
		case f := <-c.frames:
			return f.frame, f.err
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case <-c.closed:
		return nil, io.EOF
	default:
	}
	frame, err := c.nextFrame()
	if err != nil {
		select {
		case <-c.closed:
			return nil, io.EOF // read from a closed file
		default:
		}
	}
	return frame, err
}

// nextFrame reads one frame. A frame is one line, except for a JSON object
// or array spread over several lines, which the SDK's connections read
// too (and which comes out compacted to one).
func (c *lineConn) nextFrame() ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	c.acc = c.acc[:0]
	if cap(c.acc) > 1<<20 {
		c.acc = nil // the last frame was a big one: its buffer goes
	}
	var open nesting // of a value spread over lines
	fed := 0         // bytes of acc that open has seen
	for {
		chunk, err := c.in.ReadSlice('\n')
		if len(c.acc)+len(chunk) > c.max {
			c.err = errFrameTooLarge
			return nil, c.err
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			c.acc = append(c.acc, chunk...)
			continue
		}
		line := chunk
		if len(c.acc) > 0 {
			c.acc = append(c.acc, chunk...)
			line = c.acc
		}
		if err != nil {
			c.err = err
			value := trimSpace(line)
			switch {
			case len(value) == 0:
				return nil, err
			case !json.Valid(value):
				return nil, io.ErrUnexpectedEOF
			}
			return c.oneLine(value), nil // the last frame, without its line break
		}
		value := trimSpace(line)
		if len(value) == 0 {
			c.acc = c.acc[:0]
			continue
		}
		if open.depth == 0 && json.Valid(value) {
			return c.oneLine(value), nil
		}
		if len(c.acc) == 0 {
			c.acc = append(c.acc, chunk...) // the next read overwrites chunk
		}
		open.feed(c.acc[fed:])
		fed = len(c.acc)
		switch {
		case open.depth < 0 || (open.depth == 0 && !json.Valid(value)):
			c.err = errors.New("a JSON-RPC message is not valid JSON")
			return nil, c.err
		case open.depth == 0:
			return c.oneLine(value), nil
		}
	}
}

// oneLine is a valid JSON value as one line: a value spread over lines,
// or with a carriage return inside, compacted (no line-based reader on the
// other side could read it as it came).
func (c *lineConn) oneLine(value []byte) []byte {
	if bytes.IndexByte(value, '\n') < 0 && bytes.IndexByte(value, '\r') < 0 {
		return value
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, value); err != nil {
		return value // not valid: never
	}
	return compact.Bytes()
}

// trimSpace cuts JSON's white space (only: bytes.TrimSpace cuts more)
// around b.
func trimSpace(b []byte) []byte {
	b = b[skipSpace(b, 0):]
	end := len(b)
	for end > 0 && (b[end-1] == ' ' || b[end-1] == '\t' || b[end-1] == '\r' || b[end-1] == '\n') {
		end--
	}
	return b[:end]
}

// nesting follows how many objects and arrays a JSON text leaves open.
type nesting struct {
	depth            int
	inString, escape bool
}

func (n *nesting) feed(b []byte) {
	for _, c := range b {
		switch {
		case n.escape:
			n.escape = false
		case n.inString:
			n.escape = c == '\\'
			n.inString = c != '"'
		case c == '"':
			n.inString = true
		case c == '{' || c == '[':
			n.depth++
		case c == '}' || c == ']':
			n.depth--
			if n.depth < 0 {
				return
			}
		}
	}
}

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for len(c.queue) == 0 {
		frame, err := c.readFrame(ctx)
		if err != nil {
			return nil, err
		}
		if c.queue, err = c.decodeFrame(frame); err != nil {
			return nil, err
		}
	}
	msg := c.queue[0]
	c.queue = c.queue[1:]
	return msg, nil
}

// Write implements mcp.Connection: one write of the message and its line
// break.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.writeMessage(msg)
}

// writeMessage writes msg, or keeps it for its batch's answer; the caller
// holds writeMu.
func (c *lineConn) writeMessage(msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if answered, ok := c.gather(resp); ok {
			if answered == nil {
				return nil
			}
			data, err := json.Marshal(answered)
			if err != nil {
				return fmt.Errorf("encoding a batch's answer: %w", err)
			}
			return c.write(data)
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	return c.write(data)
}

// writeFrame writes frame in one write, with the id at frame[at:end]
// replaced by id when at >= 0; response says the frame is a response to
// id's request, which may belong to a batch.
func (c *lineConn) writeFrame(ctx context.Context, frame []byte, at, end int, id jsonrpc.ID, response bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	buf := c.buf[:0]
	if at >= 0 {
		buf = append(buf, frame[:at]...)
		buf = appendID(buf, id)
		buf = append(buf, frame[end:]...)
	} else {
		buf = append(buf, frame...)
	}
	if response {
		if _, batched := c.batches[id]; batched {
			msg, err := jsonrpc.DecodeMessage(bytes.Clone(buf))
			if err != nil {
				return err
			}
			return c.writeMessage(msg)
		}
	}
	err := c.write(buf)
	if cap(buf) <= 1<<20 {
		c.buf = buf[:0] // kept for the next frame, unless it is a big one
	} else {
		c.buf = nil
	}
	return err
}

// write writes data and a line break, in one write; the caller holds
// writeMu.
func (c *lineConn) write(data []byte) error {
	data = append(data, '\n')
	_, err := c.out.Write(data)
	return err
}

// Close implements mcp.Connection.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.closer()
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: stdio has none.
func (c *lineConn) SessionID() string { return "" }
