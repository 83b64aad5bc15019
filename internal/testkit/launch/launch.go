// Package launch runs questiond (or any server that logs where it listens)
// as a process of its own: it builds cmd/questiond once per source tree and
// shares the binary between test processes (Build), and starts a binary,
// finds its address in its output and stops it (Start).
//
// It does not import testing, so programs use it too (bench/cmd/sidebyside);
// package testkit is its layer for tests.
package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/questiond/questiond/internal/defaults"
)

// Listening is the message questiond logs once it accepts connections; its
// "addr" field is where.
const Listening = "questiond listening"

// Bounds on a process's life, far beyond what a healthy one needs.
const (
	DefaultStartTimeout = 30 * time.Second // from exec until it says where it listens
	DefaultStopTimeout  = 15 * time.Second // from SIGTERM until it exits
)

// keptOutput bounds how much of a process's output Process.Output keeps.
const keptOutput = 4 << 20

// ListeningAddr is questiond's address if line is its JSON "questiond
// listening" log line, else "". It needs --log-format json.
func ListeningAddr(line string) string {
	var entry struct{ Msg, Addr string }
	if json.Unmarshal([]byte(line), &entry) != nil || entry.Msg != Listening {
		return ""
	}
	return entry.Addr
}

// Options says how to start a process. The zero value starts questiond
// (its address from ListeningAddr) within DefaultStartTimeout.
type Options struct {
	// Name names the process in errors; "" means the command's base name.
	Name string
	// AddrIn returns the address a line of the output names, or "". Nil
	// means ListeningAddr.
	AddrIn func(line string) string
	// NoAddr returns from Start without waiting for an address.
	NoAddr bool
	// Log, if set, gets every line of the output as it comes.
	Log io.Writer
	// Stdin, if set, is closed by Stop before it signals (a server that
	// exits when its input ends).
	Stdin io.Closer
	// StartTimeout and StopTimeout bound Start and Stop; zero means the
	// defaults.
	StartTimeout, StopTimeout time.Duration
}

// Process is a started process. Its output (stdout and stderr) is kept for
// error messages.
type Process struct {
	Name string
	Addr string // host:port it listens on ("" with Options.NoAddr)
	URL  string // "http://" + Addr

	cmd    *exec.Cmd
	opts   Options
	output *output
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's result, set before exited is closed

	stopOnce sync.Once
}

// Start starts cmd (its Stdout and Stderr are the launcher's) and waits
// until its output names its address. The process is killed by the kernel
// if this one dies first (Pdeathsig). On an error nothing is left running
// and the error quotes the end of its output.
func Start(cmd *exec.Cmd, opts Options) (*Process, error) {
	if opts.Name == "" {
		opts.Name = cmd.Path
		if i := strings.LastIndexByte(opts.Name, '/'); i >= 0 {
			opts.Name = opts.Name[i+1:]
		}
	}
	if opts.AddrIn == nil {
		opts.AddrIn = ListeningAddr
	}
	defaults.Fill(&opts.StartTimeout, DefaultStartTimeout)
	defaults.Fill(&opts.StopTimeout, DefaultStopTimeout)
	addrs := make(chan string, 1)
	out := &output{log: opts.Log, found: func(line string) {
		if opts.NoAddr {
			return
		}
		if addr := opts.AddrIn(line); addr != "" {
			select {
			case addrs <- addr:
			default:
			}
		}
	}}
	cmd.Stdout, cmd.Stderr = out, out
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.WaitDelay = opts.StopTimeout // Wait never hangs on output pipes
	p := &Process{Name: opts.Name, cmd: cmd, opts: opts, output: out, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", opts.Name, err)
	}
	go func() {
		p.err = cmd.Wait()
		out.flush()
		close(p.exited)
	}()
	if opts.NoAddr {
		return p, nil
	}
	timeout := time.NewTimer(opts.StartTimeout)
	defer timeout.Stop()
	select {
	case p.Addr = <-addrs:
		p.URL = "http://" + p.Addr
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before listening (%v); its output ended with:\n%s", opts.Name, p.err, out.tail())
	case <-timeout.C:
		p.Kill()
		return nil, fmt.Errorf("%s did not say where it listens within %v; its output ended with:\n%s", opts.Name, opts.StartTimeout, out.tail())
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited is closed once the process has exited and its output is read.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process exited (exec.Cmd.Wait's result); call it once
// Exited is closed.
func (p *Process) Err() error { return p.err }

// Wait waits up to timeout for the process to exit and returns how it
// exited; ok is false if it did not exit in time.
func (p *Process) Wait(timeout time.Duration) (err error, ok bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return p.err, true
	case <-t.C:
		return nil, false
	}
}

// Kill kills the process and waits for it to exit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop ends the process gracefully (Options.Stdin closed, then SIGTERM),
// kills it if that takes longer than the stop timeout, and returns why it
// did not exit cleanly: it had exited on its own already, it exited with
// an error, or it had to be killed. Only the first call stops and reports;
// later ones return nil.
func (p *Process) Stop() error {
	var err error
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			err = fmt.Errorf("%s exited while still in use (%v); its output ended with:\n%s", p.Name, p.err, p.output.tail())
			return
		default:
		}
		if p.opts.Stdin != nil {
			_ = p.opts.Stdin.Close()
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		exitErr, ok := p.Wait(p.opts.StopTimeout)
		switch {
		case !ok:
			p.Kill()
			err = fmt.Errorf("%s did not exit within %v of SIGTERM, killed; its output ended with:\n%s", p.Name, p.opts.StopTimeout, p.output.tail())
		case exitErr != nil:
			err = fmt.Errorf("%s: exit after SIGTERM: %v; its output ended with:\n%s", p.Name, exitErr, p.output.tail())
		}
	})
	return err
}

// Output is what the process wrote so far (its last 4 MiB), complete lines
// only until it has exited.
func (p *Process) Output() string { return p.output.String() }

// Tail is the last lines of the output, for error messages.
func (p *Process) Tail() string { return p.output.tail() }

// output is a process's stdout and stderr: each complete line goes to log
// and found, and the last keptOutput bytes are kept.
type output struct {
	log   io.Writer
	found func(line string)

	mu      sync.Mutex
	partial []byte
	kept    []byte
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, b...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(o.partial[:i+1])
		o.partial = o.partial[i+1:]
	}
	return len(b), nil
}

// line takes one line with its newline; o.mu is held.
func (o *output) line(line []byte) {
	if o.log != nil {
		_, _ = o.log.Write(line)
	}
	o.found(string(bytes.TrimSuffix(line, []byte("\n"))))
	o.kept = append(o.kept, line...)
	if over := len(o.kept) - keptOutput; over > 0 {
		o.kept = o.kept[over:]
	}
}

// flush takes a last line without a newline.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.line(append(o.partial, '\n'))
		o.partial = nil
	}
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.kept)
}

// tailLines is how many lines of output an error quotes.
const tailLines = 20

func (o *output) tail() string {
	lines := strings.Split(strings.TrimSuffix(o.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-tailLines):], "\n")
}

// ErrNoGo is returned by Build when the go command is not on PATH.
var ErrNoGo = errors.New("no go command on PATH")

// FreePort returns a loopback TCP port nothing listens on now, for a
// server that takes its port as a flag rather than choosing one itself.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
