package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// buildDaemon compiles cmd/questiond once per test binary run.
func buildDaemon(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "questiond")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestProcessStopsOnSIGTERM runs the real binary (memory store) on a random port with only
// its environment for configuration, has an agent wait on it, and stops it
// with SIGTERM: the agent gets cancel and the process exits 0 in time.
func TestProcessStopsOnSIGTERM(t *testing.T) {
	testenv.Heavy(t, "builds and runs the binary")
	cmd := exec.Command(buildDaemon(t), "--log-format", "json")
	cmd.Env = append(os.Environ(), "QUESTIOND_ADDR=127.0.0.1:0", "QUESTIOND_SHUTDOWN_TIMEOUT=5s", "QUESTIOND_STORE=memory")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	lines := bufio.NewScanner(stderr)
	var listening struct{ Msg, Addr string }
	for listening.Msg != "questiond listening" {
		if !lines.Scan() {
			t.Fatal("the daemon never logged that it is listening")
		}
		if err := json.Unmarshal(lines.Bytes(), &listening); err != nil {
			t.Fatalf("log line %q is not JSON", lines.Text())
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	base := "http://" + listening.Addr

	result := make(chan string, 1)
	go func() {
		res, err := http.Post(base+"/elicit", "application/json", strings.NewReader(twoQuestions))
		if err != nil {
			result <- err.Error()
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		result <- strings.TrimSpace(string(body))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(base + "/question")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), `"que_`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the question never showed up")
		}
		time.Sleep(10 * time.Millisecond) // polling a real process; nothing to synchronise on
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not exit within 10s of SIGTERM")
	}
	t.Logf("stopped in %s", time.Since(start))
	if got := <-result; got != `{"action":"cancel"}` {
		t.Fatalf("the waiting agent got %q, want a cancel", got)
	}
}
