package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
)

// TestProcessStopsOnSIGTERM runs the real binary (memory store) on a random port with only
// its environment for configuration, has an agent wait on it, and stops it
// with SIGTERM: the agent gets cancel and the process exits 0 in time.
func TestProcessStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "builds and runs the binary")
	cmd := exec.Command(sharedBinary(t), "--log-format", "json")
	cmd.Env = append(os.Environ(), "QUESTIOND_ADDR=127.0.0.1:0", "QUESTIOND_SHUTDOWN_TIMEOUT=5s", "QUESTIOND_STORE=memory")
	p, err := launchDaemon(t, cmd)
	if err != nil {
		t.Fatal(err)
	}
	base := p.base

	result := testkit.PostAsync(base+"/elicit", twoQuestions)
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
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err, ok := p.Wait(10 * time.Second); !ok {
		t.Fatal("the daemon did not exit within 10s of SIGTERM")
	} else if err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	t.Logf("stopped in %s", time.Since(start))
	if got := strings.TrimSpace((<-result).Body); got != `{"action":"cancel"}` {
		t.Fatalf("the waiting agent got %q, want a cancel", got)
	}
}
