//go:build linux

package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// process is a system under test running as a process of its own, so that
// its resident memory is its alone and not the clients'.
type process struct {
	*launch.Process
	name string
	addr string // host:port it listens on
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

// questiondBinary is cmd/questiond built as `make build` does (static,
// trimmed paths; symbols kept, which changes nothing that is resident),
// once for every run that asks for the same (testkit.BinaryWith).
func questiondBinary(tb testing.TB) string {
	tb.Helper()
	return testkit.BinaryWith(tb, launch.BuildOptions{Flags: []string{"-trimpath"}, Env: []string{"CGO_ENABLED=0"}})
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
	return startProcess(tb, "questiond", cmd, nil, launch.ListeningAddr)
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
	return startProcess(tb, "baseline", cmd, stdin, func(line string) string {
		addr, _ := strings.CutPrefix(line, listeningPrefix)
		if len(addr) == len(line) {
			return ""
		}
		return addr
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
// line of its output (launch.Start). The process is stopped by the test's
// cleanup at the latest, killed if it does not stop in time, and killed by
// the kernel if this process dies first.
func startProcess(tb testing.TB, name string, cmd *exec.Cmd, stdin io.Closer, addrIn func(line string) string) *process {
	tb.Helper()
	p := testkit.Launch(tb, cmd, launch.Options{Name: name, AddrIn: addrIn, Stdin: stdin})
	tb.Cleanup(func() {
		if err := p.Stop(); err != nil {
			tb.Errorf("%s: %v", name, err)
		}
	})
	return &process{Process: p, name: name, addr: p.Addr}
}

func (p *process) pid() int { return p.Pid() }

// stop ends the process gracefully (SIGTERM, and stdin closed), kills it
// if that takes too long, and returns why it did not exit cleanly. Only the
// first call stops; later ones return nil.
func (p *process) stop() error { return p.Stop() }

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
