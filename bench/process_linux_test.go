//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// Bounds on a server process's life, far beyond what a healthy one needs.
const (
	buildTimeout = 5 * time.Minute  // go build of cmd/questiond on a busy machine
	startTimeout = 30 * time.Second // from exec until it says where it listens
	stopTimeout  = 15 * time.Second // from SIGTERM (or stdin closed) until it exits
)

// process is a system under test running as a process of its own, so that
// its resident memory is its alone and not the clients'.
type process struct {
	name   string
	addr   string // host:port it listens on
	cmd    *exec.Cmd
	stdin  io.Closer     // the baseline exits when it is closed
	output *outputTail   // the last lines of its stdout and stderr, for errors
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's result, set before exited is closed

	stopOnce sync.Once
}

// processServers are the systems the idle-subscriber benchmark compares,
// questiond first. Each starts a fresh process allowing at least streams
// event streams.
var processServers = []struct {
	name  string
	start func(tb testing.TB, bin string, streams int) *process
}{
	{"questiond", startQuestiondProcess},
	{"baseline", startBaselineProcess},
}

// buildQuestiond compiles cmd/questiond as `make build` does (static,
// trimmed paths; symbols kept, which changes nothing that is resident) into
// dir and returns the binary's path.
func buildQuestiond(tb testing.TB, dir string) string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(tb, "the go command", "put the Go toolchain on PATH")
	}
	bin := filepath.Join(dir, "questiond")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-o", bin, "github.com/questiond/questiond/cmd/questiond")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/questiond: %v\n%s", err, out)
	}
	return bin
}

// startQuestiondProcess runs the questiond binary bin with its default
// settings except: the memory store, a free loopback port, JSON logs (to
// read the port from), room for streams event streams, and no request rate
// limit (every subscriber comes from 127.0.0.1, one client to the limiter).
func startQuestiondProcess(tb testing.TB, bin string, streams int) *process {
	tb.Helper()
	cmd := exec.Command(bin,
		"--store", "memory", "--addr", "127.0.0.1:0", "--log-format", "json",
		"--max-streams", strconv.Itoa(streams), "--rate-limit", "0", "--shutdown-timeout", "5s")
	cmd.Env = environWithout("QUESTIOND_") // only the flags above change a default
	return startProcess(tb, "questiond", cmd, nil, func(line []byte) string {
		var entry struct{ Msg, Addr string }
		if json.Unmarshal(line, &entry) != nil || entry.Msg != "questiond listening" {
			return ""
		}
		return entry.Addr
	})
}

// baselineProcessQueue is the baseline's queue per subscriber in its own
// process. Its channel is allocated whole when a subscriber connects, 24
// bytes a slot: at questiond's default of 1 024 slots that alone is 24 KiB
// per idle subscriber, which would bury what the baseline is there to show,
// the cost of an idle net/http stream itself. 16 slots are 384 bytes.
const baselineProcessQueue = 16

// startBaselineProcess re-executes this test binary as the baseline server
// (see serveChild); streams is not needed, it has no stream limit.
func startBaselineProcess(tb testing.TB, _ string, _ int) *process {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(environWithout("QUESTIOND_BENCH_"), serveEnv+"=baseline", queueEnv+"="+strconv.Itoa(baselineProcessQueue))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	return startProcess(tb, "baseline", cmd, stdin, func(line []byte) string {
		addr, _ := bytes.CutPrefix(line, []byte(listeningPrefix))
		if len(addr) == len(line) {
			return ""
		}
		return string(addr)
	})
}

// environWithout is this process's environment minus the variables whose
// names start with prefix.
func environWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// startProcess starts cmd and waits until addrIn finds its address in a
// line of its output. The process is stopped by the test's cleanup at the
// latest, killed if it does not stop in time, and killed by the kernel if
// this process dies first (Pdeathsig; Go keeps the thread that started it
// alive, since nothing here locks goroutines to threads).
func startProcess(tb testing.TB, name string, cmd *exec.Cmd, stdin io.Closer, addrIn func(line []byte) string) *process {
	tb.Helper()
	addrs := make(chan string, 1)
	tail := &outputTail{found: func(line []byte) {
		if addr := addrIn(line); addr != "" {
			select {
			case addrs <- addr:
			default:
			}
		}
	}}
	cmd.Stdout, cmd.Stderr = tail, tail
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = stopTimeout // Wait never hangs on output pipes
	p := &process{name: name, cmd: cmd, stdin: stdin, output: tail, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		if err := p.stop(); err != nil {
			tb.Errorf("%s: %v", name, err)
		}
	})

	timeout := time.NewTimer(startTimeout)
	defer timeout.Stop()
	select {
	case p.addr = <-addrs:
		return p
	case <-p.exited:
		tb.Fatalf("%s exited before listening (%v); its output ended with:\n%s", name, p.err, tail)
	case <-timeout.C:
		tb.Fatalf("%s did not say where it listens within %v; its output ended with:\n%s", name, startTimeout, tail)
	}
	return nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop ends the process gracefully (SIGTERM, and stdin closed), kills it
// if that takes longer than stopTimeout, and returns why it did not exit
// cleanly. Only the first call stops; later ones return nil.
func (p *process) stop() error {
	var err error
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			err = fmt.Errorf("exited while still in use (%v); its output ended with:\n%s", p.err, p.output)
			return
		default:
		}
		if p.stdin != nil {
			_ = p.stdin.Close()
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timeout := time.NewTimer(stopTimeout)
		defer timeout.Stop()
		select {
		case <-p.exited:
			if p.err != nil {
				err = fmt.Errorf("exit after SIGTERM: %v; its output ended with:\n%s", p.err, p.output)
			}
		case <-timeout.C:
			_ = p.cmd.Process.Kill()
			<-p.exited
			err = fmt.Errorf("did not exit within %v of SIGTERM, killed; its output ended with:\n%s", stopTimeout, p.output)
		}
	})
	return err
}

// outputTail is a process's stdout and stderr: each complete line goes to
// found, and the last lines are kept for error messages.
type outputTail struct {
	found func(line []byte)

	mu      sync.Mutex
	partial []byte
	lines   []string
}

const tailLines = 20

func (o *outputTail) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		line := o.partial[:i]
		o.found(line)
		o.lines = append(o.lines, string(line))
		if len(o.lines) > tailLines {
			o.lines = o.lines[1:]
		}
		o.partial = o.partial[i+1:]
	}
	return len(p), nil
}

func (o *outputTail) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(append(o.lines, string(o.partial)), "\n")
}

// residentKiB is the resident set (VmRSS) of process pid, in KiB.
func residentKiB(pid int) (int64, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		value, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS of %d: %w", pid, err)
		}
		return kib, nil
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status (a zombie?)")
}
