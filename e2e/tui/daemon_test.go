package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// daemon is questiond running as a process on a loopback port. Its log (JSON
// lines, every start appended) is the artifact questiond.log.
type daemon struct {
	t       *testing.T
	opts    daemonOptions
	addr    string // host:port, kept across restarts
	URL     string
	proc    *launch.Process
	logPath string
}

type daemonOptions struct {
	password string // operator password; "" leaves operator routes open
	durable  bool   // the bolt store in a test directory; memory otherwise
	args     []string
}

// startDaemon starts questiond on a free port; it is killed when the test
// ends.
func startDaemon(t *testing.T, opts daemonOptions) *daemon {
	t.Helper()
	return startDaemonAt(t, "127.0.0.1:0", opts)
}

// startDaemonAt starts questiond listening on addr (host:port), for a
// process that must be told questiond's address before questiond starts.
func startDaemonAt(t *testing.T, addr string, opts daemonOptions) *daemon {
	t.Helper()
	d := &daemon{t: t, opts: opts, addr: addr, logPath: filepath.Join(t.ArtifactDir(), "questiond.log")}
	if opts.durable {
		d.opts.args = append([]string{"--store", "bolt", "--data-dir", t.TempDir()}, d.opts.args...)
	} else {
		d.opts.args = append([]string{"--store", "memory"}, d.opts.args...)
	}
	t.Cleanup(d.kill)
	d.start()
	return d
}

func (d *daemon) start() {
	d.t.Helper()
	args := append([]string{"--addr", d.addr, "--log-format", "json", "--log-level", "debug"}, d.opts.args...)
	cmd := exec.Command(daemonBinary(d.t), args...)
	cmd.Env = cleanEnv()
	if d.opts.password != "" {
		cmd.Env = append(cmd.Env, "QUESTIOND_OPERATOR_PASSWORD="+d.opts.password)
	}
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	p, err := launch.Start(cmd, launch.Options{Name: "questiond", Log: logFile, StartTimeout: 20 * time.Second})
	if err != nil {
		logFile.Close()
		d.t.Fatalf("%v\nlog: %s", err, d.logPath)
	}
	go func() { <-p.Exited(); logFile.Close() }()
	d.proc, d.addr, d.URL = p, p.Addr, p.URL
}

// restart stops questiond with SIGTERM (a graceful shutdown) and starts it
// again on the same address and store.
func (d *daemon) restart() {
	d.t.Helper()
	d.stop()
	d.start()
}

func (d *daemon) stop() {
	d.t.Helper()
	if err := d.proc.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	err, ok := d.proc.Wait(20 * time.Second)
	if !ok {
		d.t.Fatalf("questiond did not exit within 20s of SIGTERM; log: %s", d.logPath)
	}
	if err != nil {
		d.t.Fatalf("questiond exited with %v after SIGTERM; log: %s", err, d.logPath)
	}
}

func (d *daemon) kill() {
	if d.proc == nil {
		return
	}
	d.proc.Kill()
}

// cleanEnv is this process's environment without the variables that would
// configure questiond or OpenCode behind the test's back.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "QUESTIOND_") || strings.HasPrefix(kv, "OPENCODE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

var httpClient = &http.Client{Timeout: 2 * time.Minute}

// call sends a request with an optional JSON body and returns the status and
// the body.
func (d *daemon) call(method, path string, body any, header ...string) (int, []byte) {
	d.t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			d.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, d.URL+path, r)
	if err != nil {
		d.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if d.opts.password != "" && req.Header.Get("Authorization") == "" && !strings.HasPrefix(path, "/elicit") {
		req.SetBasicAuth("opencode", d.opts.password)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		d.t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return res.StatusCode, data
}

// elicitResult is what POST /elicit answers: MCP's ElicitResult.
type elicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
	err     error
}

// elicit asks through POST /elicit in the background, as an agent that
// waits for its answer; the channel gets the result once the question ends.
func (d *daemon) elicit(ctx context.Context, body map[string]any) <-chan elicitResult {
	return d.elicitAs(ctx, "", body)
}

// elicitAs is elicit as the agent whose token is token ("" for none).
func (d *daemon) elicitAs(ctx context.Context, token string, body map[string]any) <-chan elicitResult {
	data, err := json.Marshal(body)
	if err != nil {
		d.t.Fatal(err)
	}
	out := make(chan elicitResult, 1)
	url := d.URL + "/elicit"
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
		if err != nil {
			out <- elicitResult{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- elicitResult{err: err}
			return
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		var r elicitResult
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("POST /elicit: %s: %s", res.Status, raw)
		}
		if err == nil {
			err = json.Unmarshal(raw, &r)
		}
		r.err = err
		out <- r
	}()
	return out
}

// pendingQuestion is one entry of GET /question.
type pendingQuestion struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
}

// waitPending waits until the session has n pending questions, as operators
// list them, and returns them.
func (d *daemon) waitPending(session string, n int) []pendingQuestion {
	d.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, body := d.call(http.MethodGet, "/question", nil)
		var all, mine []pendingQuestion
		if status == http.StatusOK && json.Unmarshal(body, &all) == nil {
			for _, q := range all {
				if q.SessionID == session {
					mine = append(mine, q)
				}
			}
			if len(mine) == n {
				return mine
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("session %s: want %d pending questions; GET /question: %d %s", session, n, status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// await waits for an agent's result.
func await(t *testing.T, results <-chan elicitResult, within time.Duration) elicitResult {
	t.Helper()
	r := testkit.Receive(t, results, within, "the agent's result")
	if r.err != nil {
		t.Fatalf("the agent's question failed: %v", r.err)
	}
	return r
}

// stillWaiting fails the test if the agent already has a result.
func stillWaiting(t *testing.T, results <-chan elicitResult) {
	t.Helper()
	select {
	case r := <-results:
		t.Fatalf("the agent already got a result: %+v", r)
	default:
	}
}
