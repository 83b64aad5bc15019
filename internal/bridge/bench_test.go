package bridge_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testkit"
)

// The cost of the bridge for what it only relays: a host calling a tool
// that does not elicit ("echo") on the upstream process directly, and
// through `questiond bridge` in front of the same program. Compare the two
// in one run (BENCHMARKS.md): go test -run '^$' -bench ToolCall -count 5 ./internal/bridge/
func BenchmarkToolCallDirect(b *testing.B) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), upstreamEnv+"=1")
	benchToolCalls(b, cmd)
}

func BenchmarkToolCallBridged(b *testing.B) {
	cmd := exec.Command(testkit.Binary(b), "bridge", "--name", "bench", "--", os.Args[0])
	cmd.Env = append(os.Environ(), upstreamEnv+"=1", "QUESTIOND_SERVER=http://127.0.0.1:1")
	benchToolCalls(b, cmd)
}

func benchToolCalls(b *testing.B, cmd *exec.Cmd) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-host", Version: "1"}, nil).
		Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	idle := residentKiB(cmd) // of the host's server process: the upstream, or the bridge
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	for b.Loop() {
		if _, err := cs.CallTool(b.Context(), params); err != nil {
			b.Fatal(err)
		}
	}
	if idle > 0 {
		b.ReportMetric(float64(idle), "idle-RSS-KiB")
	}
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
