package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

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

// StdioTransport is the host's end: the bridge's stdin and stdout.
type StdioTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
}

// Connect implements mcp.Transport. Pipes and sockets are read and written
// through copies in the runtime's poller (see pollable).
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	in, inline := interruptible(t.Reader)
	closers := []io.Closer{in}
	var reader io.Reader = in
	if in != t.Reader { // a copy in the poller
		reader = rawFile(in.(*os.File))
		closers = append(closers, t.Reader)
	}
	var writer io.Writer = t.Writer
	if f, ok := t.Writer.(*os.File); ok {
		if polled, ok := pollable(f); ok {
			writer = rawFile(polled)
			closers = append(closers, polled)
		}
	}
	closers = append(closers, t.Writer)
	return newLineConn(reader, writer, inline, func() error {
		var err error
		for _, c := range closers {
			err = errors.Join(err, c.Close())
		}
		return err
	}), nil
}

// CommandTransport runs the upstream server's process and speaks to it
// over its stdin and stdout. Closing the connection closes the process's
// stdin and waits for it to exit, terminating it after TerminateDuration
// (default 5 s) and killing it after as long again, as MCP's stdio
// shutdown asks.
type CommandTransport struct {
	Command           *exec.Cmd
	TerminateDuration time.Duration
}

const defaultTerminateDuration = 5 * time.Second

// Connect implements mcp.Transport: it starts the command, on pipes of its
// own whose ends here are in the runtime's poller.
func (t *CommandTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Command.Stdin != nil || t.Command.Stdout != nil {
		return nil, errors.New("the server's command has its stdin or stdout set already")
	}
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		_, _ = childIn.Close(), stdin.Close()
		return nil, err
	}
	t.Command.Stdin, t.Command.Stdout = childIn, childOut
	err = t.Command.Start()
	_, _ = childIn.Close(), childOut.Close() // the child's now, or nobody's
	if err != nil {
		_, _ = stdin.Close(), stdout.Close()
		return nil, err
	}
	wait := t.TerminateDuration
	if wait <= 0 {
		wait = defaultTerminateDuration
	}
	return newLineConn(rawFile(stdout), rawFile(stdin), true, func() error {
		err := stop(t.Command, stdin, wait)
		_ = stdout.Close() // ends a read, once the process is gone
		return err
	}), nil
}

// stop ends cmd: its stdin closed, then SIGTERM, then SIGKILL, each after
// wait without its exit.
func stop(cmd *exec.Cmd, stdin io.Closer, wait time.Duration) error {
	if err := stdin.Close(); err != nil {
		return fmt.Errorf("closing the server's stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for _, next := range []func() error{
		func() error { return cmd.Process.Signal(syscall.SIGTERM) },
		cmd.Process.Kill,
	} {
		timer := time.NewTimer(wait)
		select {
		case err := <-exited:
			timer.Stop()
			return err
		case <-timer.C:
		}
		_ = next()
	}
	return <-exited
}

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

// interruptibleReader: readers whose Close ends a Read waiting for input.
func interruptibleReader(r io.Reader) bool {
	switch r.(type) {
	case *io.PipeReader, net.Conn:
		return true
	}
	return false
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

// decodeFrame decodes a frame the fast path left: one message, or a batch
// whose requests' responses go back as one batch.
func (c *lineConn) decodeFrame(frame []byte) ([]jsonrpc.Message, error) {
	frame = bytes.Clone(frame) // the messages keep parts of it
	if frame[0] != '[' {
		msg, err := jsonrpc.DecodeMessage(frame)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{msg}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(frame, &raws); err != nil {
		return nil, fmt.Errorf("a JSON-RPC batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("an empty JSON-RPC batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	answer := &batchAnswer{index: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if _, twice := answer.index[req.ID]; twice {
				return nil, fmt.Errorf("a JSON-RPC batch has the id %v twice", req.ID.Raw())
			}
			answer.index[req.ID] = len(answer.responses)
			answer.responses = append(answer.responses, nil)
		}
		msgs = append(msgs, msg)
	}
	if len(answer.index) > 0 {
		if err := c.await(answer); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// batchAnswer gathers the responses to a batch's requests.
type batchAnswer struct {
	index     map[jsonrpc.ID]int // request id → its response's place
	responses []*jsonrpc.Response
	missing   int
}

func (c *lineConn) await(answer *batchAnswer) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	for id := range answer.index {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("a JSON-RPC batch reuses the id %v of an unanswered one", id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*batchAnswer{}
	}
	for id := range answer.index {
		c.batches[id] = answer
	}
	answer.missing = len(answer.index)
	return nil
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

// gather keeps resp for its batch's answer, if it belongs to a batch: the
// whole answer (encoded) once resp completes it.
func (c *lineConn) gather(resp *jsonrpc.Response) ([]json.RawMessage, bool) {
	answer, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, resp.ID)
	answer.responses[answer.index[resp.ID]] = resp
	if answer.missing--; answer.missing > 0 {
		return nil, true
	}
	out := make([]json.RawMessage, len(answer.responses))
	for i, r := range answer.responses {
		out[i], _ = jsonrpc.EncodeMessage(r)
	}
	return out, true
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

// interruptible returns a reader of r whose reads Close interrupts, and
// true; or r and false when there is none (a terminal, a file).
func interruptible(r io.ReadCloser) (io.ReadCloser, bool) {
	if interruptibleReader(r) {
		return r, true
	}
	if f, ok := r.(*os.File); ok {
		if polled, ok := pollable(f); ok {
			return polled, true
		}
	}
	return r, false
}
