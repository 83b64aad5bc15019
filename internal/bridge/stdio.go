package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bridge's stdio: the host's end (its own stdin and stdout) and the
// upstream server's process, read and written through lineConns.

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

// interruptibleReader: readers whose Close ends a Read waiting for input.
func interruptibleReader(r io.Reader) bool {
	switch r.(type) {
	case *io.PipeReader, net.Conn:
		return true
	}
	return false
}

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
