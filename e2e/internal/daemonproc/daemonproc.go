// Package daemonproc runs the real questiond binary as a child process for
// the end-to-end suites under e2e/: it builds cmd/questiond once per test
// binary, starts it on a free loopback port and keeps its log.
package daemonproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// Binary builds cmd/questiond once for the test binary and returns its
// path; RemoveBinary (from TestMain) deletes it.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "questiond-e2e-")
		if buildErr != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "questiond"), "github.com/questiond/questiond/cmd/questiond").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "questiond")
}

// RemoveBinary deletes what Binary built.
func RemoveBinary() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// Process is one questiond process.
type Process struct {
	Name   string
	Cmd    *exec.Cmd
	Base   string        // http://host:port
	Exited chan struct{} // closed once the process has exited and been waited for
	mu     sync.Mutex
	logs   strings.Builder
}

// Start starts questiond on a free loopback port with env added to the
// test's, JSON debug logs, a 500 ms keepalive and args (a flag given again
// in args wins), and waits until it listens. The process is killed when
// the test ends; its log is printed if the test failed.
func Start(t testing.TB, name string, env []string, args ...string) *Process {
	t.Helper()
	// A short keepalive: a retry that attaches to a wait sends its headers
	// with the first keepalive byte.
	cmd := exec.Command(Binary(t), append([]string{"--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug", "--keepalive", "500ms"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Name: name, Cmd: cmd, Exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.Write(append(sc.Bytes(), '\n'))
			p.mu.Unlock()
			var entry struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Msg == "questiond listening" {
				addr <- entry.Addr
			}
		}
		_, _ = io.Copy(io.Discard, stderr) // a line too long to scan must not block the child
		_ = cmd.Wait()
		close(p.Exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.Exited
		if t.Failed() {
			t.Logf("questiond %s logs:\n%s", name, p.Log())
		}
	})
	select {
	case a := <-addr:
		p.Base = "http://" + a
	case <-p.Exited:
		t.Fatalf("questiond %s exited before listening:\n%s", name, p.Log())
	case <-time.After(20 * time.Second):
		t.Fatalf("questiond %s did not start in 20 s:\n%s", name, p.Log())
	}
	return p
}

// Log is what the process has logged so far.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}
