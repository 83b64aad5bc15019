package launch_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit/launch"
)

func TestListeningAddr(t *testing.T) {
	for line, want := range map[string]string{
		`{"level":"info","msg":"questiond listening","addr":"127.0.0.1:4096","scheme":"http"}`: "127.0.0.1:4096",
		`{"level":"info","msg":"questiond stopping","addr":"127.0.0.1:4096"}`:                  "",
		`questiond listening on 127.0.0.1:4096`:                                                "",
	} {
		if got := launch.ListeningAddr(line); got != want {
			t.Errorf("ListeningAddr(%s) = %q, want %q", line, got, want)
		}
	}
}

// A process that says where it listens is started, its output kept, and
// stopped with SIGTERM.
func TestStartFindsTheAddressAndStops(t *testing.T) {
	// The trap comes first: Stop may signal as soon as the address is out.
	script := `trap 'echo bye; exit 0' TERM; echo starting; echo '{"msg":"questiond listening","addr":"127.0.0.1:1"}' >&2; while :; do sleep 0.01; done`
	p, err := launch.Start(exec.Command("sh", "-c", script), launch.Options{Name: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != "127.0.0.1:1" || p.URL != "http://127.0.0.1:1" {
		t.Fatalf("Addr %q URL %q", p.Addr, p.URL)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if out := p.Output(); !strings.HasPrefix(out, "starting\n") || !strings.HasSuffix(out, "bye\n") {
		t.Fatalf("output %q", out)
	}
}

// A process that exits before it listens is an error quoting its output.
func TestStartReportsAnEarlyExit(t *testing.T) {
	_, err := launch.Start(exec.Command("sh", "-c", "echo no store here; exit 3"), launch.Options{Name: "fake"})
	if err == nil || !strings.Contains(err.Error(), "fake exited before listening") || !strings.Contains(err.Error(), "no store here") {
		t.Fatalf("error %v", err)
	}
}

// A process that ignores SIGTERM is killed after the stop timeout, and
// Stop says so.
func TestStopKillsAStubbornProcess(t *testing.T) {
	script := `trap '' TERM; echo '{"msg":"questiond listening","addr":"a:1"}'; while :; do sleep 0.01; done`
	p, err := launch.Start(exec.Command("sh", "-c", script), launch.Options{StopTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop = %v, want it killed", err)
	}
	if ws, ok := p.Err().(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit %v, want SIGKILL", p.Err())
	}
}

// Programs use the launcher (bench/cmd/sidebyside): it must not pull in
// package testing, whose flags a program would then carry.
func TestLauncherDoesNotImportTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/questiond/questiond/internal/testkit/launch").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "testing" {
			t.Fatal("package launch imports testing")
		}
	}
}

// Build builds once per source tree: a second call, in this process or
// another, gets the same binary, which runs.
func TestBuildIsShared(t *testing.T) {
	testenv.Heavy(t, "builds cmd/questiond")
	first, err := launch.Build(t.Context(), launch.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "test", "-count=1", "-run", "^TestBuildFromAnotherProcess$", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("another process: %v\n%s", err, out)
	}
	again, err := os.Stat(first)
	if err != nil || !os.SameFile(info, again) || !again.ModTime().Equal(info.ModTime()) {
		t.Fatalf("the other process rebuilt %s (%v)", first, err)
	}
	if out, err := exec.Command(first, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--addr") {
		t.Fatalf("%s --help: %v\n%s", first, err, out)
	}
}

// TestBuildFromAnotherProcess is TestBuildIsShared's other process.
func TestBuildFromAnotherProcess(t *testing.T) {
	if _, err := launch.Build(t.Context(), launch.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
}

// FreePort names a loopback port a server can then listen on.
func TestFreePort(t *testing.T) {
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("listening on the free port %d: %v", port, err)
	}
	ln.Close()
}
