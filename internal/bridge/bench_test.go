package bridge_test

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testkit"
)

// The cost of the bridge for what it only relays: a host calling a tool
// that does not elicit ("echo") on the upstream process directly, through
// `questiond bridge` in front of the same program, and through the least a
// relay process can do (Floor: the test binary copying bytes both ways,
// with no framing at all, see runCatRelay), which shows what the third
// process's pipe hops and wake-ups cost by themselves. Compare them in one run (BENCHMARKS.md):
//
//	go test -run '^$' -bench ToolCall -count 5 -benchtime 2000x ./internal/bridge/
//
// p50-µs is the median call's latency, server-cpu-µs/op the processor time
// the host's server process (the upstream, the bridge or the floor relay)
// spent on a call; the Concurrent ones keep concurrentCalls calls in
// flight.
func BenchmarkToolCallDirect(b *testing.B) {
	benchToolCalls(b, upstreamCommand(), 1)
}

func BenchmarkToolCallBridged(b *testing.B) {
	benchToolCalls(b, bridgedCommand(b), 1)
}

func BenchmarkToolCallFloor(b *testing.B) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), catRelayEnv+"=1")
	benchToolCalls(b, cmd, 1)
}

// concurrentCalls is how many calls the Concurrent benchmarks keep in
// flight.
const concurrentCalls = 8

func BenchmarkToolCallConcurrentDirect(b *testing.B) {
	benchToolCalls(b, upstreamCommand(), concurrentCalls)
}

func BenchmarkToolCallConcurrentBridged(b *testing.B) {
	benchToolCalls(b, bridgedCommand(b), concurrentCalls)
}

func upstreamCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), upstreamEnv+"=1")
	return cmd
}

// bridgedCommand is the bridge in front of the upstream; BRIDGE_BENCH_BINARY
// names another questiond binary to measure (an earlier build, for a
// before-and-after).
func bridgedCommand(b *testing.B) *exec.Cmd {
	bin := os.Getenv("BRIDGE_BENCH_BINARY")
	if bin == "" {
		bin = testkit.Binary(b)
	}
	cmd := exec.Command(bin, "bridge", "--name", "bench", "--", os.Args[0])
	cmd.Env = append(os.Environ(), upstreamEnv+"=1", "QUESTIOND_SERVER=http://127.0.0.1:1")
	return cmd
}

// benchToolCalls calls echo b.N times on cmd's server, inFlight at once.
func benchToolCalls(b *testing.B, cmd *exec.Cmd, inFlight int) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1"}, nil).
		Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	idle := residentKiB(cmd) // of the host's server process: the upstream, the bridge or the floor relay
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	latencies := make([]time.Duration, b.N)
	cpuBefore := cpuTime(cmd)
	var next sync.Mutex
	n := 0
	b.ResetTimer()
	var callers sync.WaitGroup
	for range inFlight {
		callers.Go(func() {
			for {
				next.Lock()
				i := n
				n++
				next.Unlock()
				if i >= b.N {
					return
				}
				start := time.Now()
				if _, err := cs.CallTool(b.Context(), params); err != nil {
					b.Error(err)
					return
				}
				latencies[i] = time.Since(start)
			}
		})
	}
	callers.Wait()
	b.StopTimer()
	if cpu := cpuTime(cmd) - cpuBefore; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "server-cpu-µs/op")
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds())/1e3, "p50-µs")
	if idle > 0 {
		b.ReportMetric(float64(idle), "idle-RSS-KiB")
	}
}

// catRelayEnv makes the test binary the floor relay: it runs the upstream
// (the test binary again) and copies bytes between its own stdio and the
// upstream's as they come, each direction a thread blocked in read(2) that
// write(2)s what it read, with no framing and no scheduler in between: the
// least any relay process can do (copyRaw).
const catRelayEnv = "BRIDGE_TEST_CAT_RELAY"

func runCatRelay() {
	var toChild, fromChild [2]int
	if syscall.Pipe2(toChild[:], syscall.O_CLOEXEC) != nil || syscall.Pipe2(fromChild[:], syscall.O_CLOEXEC) != nil {
		os.Exit(1)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), upstreamEnv+"=1", catRelayEnv+"=")
	cmd.Stdin = os.NewFile(uintptr(toChild[0]), "upstream-stdin")
	cmd.Stdout = os.NewFile(uintptr(fromChild[1]), "upstream-stdout")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		os.Exit(1)
	}
	_, _ = syscall.Close(toChild[0]), syscall.Close(fromChild[1])
	runtime.GOMAXPROCS(4) // two Ps held by the copies, and some for the rest
	go func() {
		copyRaw(toChild[1], 0)
		_ = syscall.Close(toChild[1]) // the host left: so does the upstream
	}()
	copyRaw(1, fromChild[0])
	_ = cmd.Wait()
	os.Exit(0)
}

// copyRaw copies from the blocking file descriptor src to dst until src
// ends, on a thread of its own, with raw system calls: the runtime is not
// told (it would wake its monitor thread at each call).
func copyRaw(dst, src int) {
	runtime.LockOSThread()
	buf := make([]byte, 64<<10)
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(src), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || n == 0 {
			return
		}
		for off := uintptr(0); off < n; {
			m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(dst), uintptr(unsafe.Pointer(&buf[off])), n-off)
			if errno == syscall.EINTR {
				continue
			}
			if errno != 0 {
				return
			}
			off += m
		}
	}
}

// cpuTime is the processor time cmd's process has used (Linux), or 0.
func cpuTime(cmd *exec.Cmd) time.Duration {
	if cmd.Process == nil {
		return 0
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	// After the command's name, in parentheses: utime and stime are the
	// 12th and 13th fields, in clock ticks (100 a second on Linux).
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0
	}
	user, _ := strconv.Atoi(fields[11])
	system, _ := strconv.Atoi(fields[12])
	return time.Duration(user+system) * 10 * time.Millisecond
}

// residentKiB is the resident memory of cmd's process (Linux), or 0.
func residentKiB(cmd *exec.Cmd) int {
	if cmd.Process == nil {
		return 0
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
