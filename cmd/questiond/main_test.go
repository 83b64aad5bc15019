package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/testkit"
)

// Leak sources this guards: the HTTP server, event streams and store timers
// of a daemon that did not shut down completely.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the daemon's logger and the test.
type syncBuffer = testkit.SyncBuffer

// startDaemon runs the whole program on a random port, as main would.
func startDaemon(t *testing.T, env map[string]string, args ...string) (base string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dataDir := t.TempDir()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	getenv := func(k string) string { return env[k] }
	go func() {
		done <- run(ctx, append([]string{"--addr", "127.0.0.1:0", "--data-dir", dataDir}, args...), getenv, io.Discard, logs, ready)
	}()
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		cancel()
		t.Fatalf("daemon did not start: %v\n%s", err, logs)
	}
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(15 * time.Second):
				stopErr = errors.New("daemon did not stop within 15s")
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	return base, stop
}

const twoQuestions = `{"message":"Diagnose","requestedSchema":{"type":"object","properties":{
	"model":{"type":"string","enum":["SY215C","SY365H"]},
	"symptoms":{"type":"array","items":{"type":"string","enum":["Black smoke","Low power"]}}},"required":["model"]}}`

func TestMemoryDaemonEndsQuestionsOnShutdown(t *testing.T) {
	t.Parallel()
	base, stop := startDaemon(t, nil, "--store", "memory")

	// An agent waits on POST /elicit while the daemon is stopped: it must
	// get a cancel, not a dropped connection.
	result := make(chan string, 1)
	go func() {
		res, err := http.Post(base+"/elicit", "application/json", strings.NewReader(twoQuestions))
		if err != nil {
			result <- "error: " + err.Error()
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		result <- strings.TrimSpace(string(body))
	}()
	// An operator's event stream is open too.
	stream, err := http.Get(base + "/event")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	frames := make(chan string, 16)
	go func() {
		defer close(frames)
		buf := make([]byte, 4096)
		for {
			n, err := stream.Body.Read(buf)
			if n > 0 {
				frames <- string(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	waitFor := func(what string) string {
		t.Helper()
		deadline := time.After(10 * time.Second)
		var seen strings.Builder
		for {
			select {
			case f, ok := <-frames:
				if !ok {
					t.Fatalf("stream ended before %s; saw %s", what, seen.String())
				}
				seen.WriteString(f)
				if strings.Contains(seen.String(), what) {
					return seen.String()
				}
			case <-deadline:
				t.Fatalf("no %s within 10s; saw %s", what, seen.String())
			}
		}
	}
	waitFor(`"type":"question.asked"`)

	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %s", took)
	}
	if got := <-result; got != `{"action":"cancel"}` {
		t.Fatalf("waiting agent got %q, want a cancel", got)
	}
	waitFor(`"type":"question.rejected"`)
	for range frames {
	} // the stream ends
}

func TestHelpDocumentsEveryFlagWithItsEnvironmentTwin(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := parseConfig([]string{"--help"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	help := out.String()
	for _, name := range []string{"addr", "log-level", "log-format", "heartbeat", "default-timeout", "max-timeout",
		"max-wait", "keepalive", "retention", "max-body", "max-properties", "max-options", "header-limit", "event-queue",
		"event-write-timeout", "max-directories", "cors", "shutdown-timeout", "store", "data-dir", "allowed-hosts",
		"insecure", "tls-cert", "tls-key", "agent-token-file", "max-pending", "max-pending-per-agent", "max-streams", "rate-limit"} {
		if !strings.Contains(help, "--"+name) || !strings.Contains(help, envName(name)) {
			t.Errorf("--help does not document --%s and %s", name, envName(name))
		}
	}
	for _, secret := range []string{"QUESTIOND_OPERATOR_PASSWORD", "OPENCODE_SERVER_PASSWORD", "QUESTIOND_AGENT_TOKENS"} {
		if !strings.Contains(help, secret) {
			t.Errorf("--help does not document %s", secret)
		}
	}
}

func TestEnvironmentTwinsAndFlagPrecedence(t *testing.T) {
	t.Parallel()
	env := map[string]string{"QUESTIOND_HEARTBEAT": "3s", "QUESTIOND_MAX_WAIT": "1m", "QUESTIOND_CORS": "https://a.example, https://b.example"}
	cfg, err := parseConfig([]string{"--max-wait", "2m"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.heartbeat != 3*time.Second || cfg.maxWait != 2*time.Minute {
		t.Fatalf("heartbeat %s (want 3s from env), max-wait %s (want 2m from the flag)", cfg.heartbeat, cfg.maxWait)
	}
	if options, err := parseConfig(nil, func(k string) string { return map[string]string{"QUESTIOND_MAX_OPTIONS": "300"}[k] }, io.Discard); err != nil || options.maxOptions != 300 {
		t.Fatalf("QUESTIOND_MAX_OPTIONS=300: %+v, %v", options, err)
	}
	if got := strings.Join(cfg.corsOrigins(), "|"); got != "https://a.example|https://b.example" {
		t.Fatalf("cors origins %q", got)
	}
}

func TestBadSettingsAreRefusedByName(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--heartbeat 0s":                        "--heartbeat must be positive",
		"--default-timeout 2h --max-timeout 1h": "--default-timeout 2h0m0s is longer than --max-timeout",
		"--log-format xml":                      "--log-format must be",
		"--max-properties -1":                   "--max-properties must be positive",
		"--max-options 0":                       "--max-options must be positive",
		"--cors *":                              "wildcard",
		"extra":                                 `unexpected argument "extra"`,
	} {
		_, err := parseConfig(strings.Fields(args), func(string) string { return "" }, io.Discard)
		if err == nil && want == "wildcard" {
			// --cors is checked when the server is built.
			err = run(context.Background(), strings.Fields(args+" --addr 127.0.0.1:0 --store memory"), func(string) string { return "" }, io.Discard, io.Discard, nil)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", args, err, want)
		}
	}
	err := run(context.Background(), nil, func(k string) string {
		return map[string]string{"QUESTIOND_HEARTBEAT": "soon"}[k]
	}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "QUESTIOND_HEARTBEAT") {
		t.Errorf("a bad environment value: %v", err)
	}
}

func TestVersionFlag(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, func(string) string { return "" }, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "questiond ") {
		t.Fatalf("--version printed %q", out.String())
	}
	var health struct{ Version string }
	base, _ := startDaemon(t, nil)
	res, err := http.Get(base + "/global/health")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_ = json.NewDecoder(res.Body).Decode(&health)
	if health.Version != version {
		t.Fatalf("health reports %q, want %q", health.Version, version)
	}
}
