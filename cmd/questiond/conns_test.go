package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/testenv"
)

// A client's spare connection that never sent a request must not hold a
// shutdown: net/http alone waits up to five seconds for it.
func TestShutdownDoesNotWaitForSilentConnections(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	p := startProcess(t, "--store", "memory")
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(50 * time.Millisecond) // let the server accept it
	start := time.Now()
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, p.Output())
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %s with one silent connection open", took)
	}
}

// A client that sent its headers and part of a body must not make SIGTERM
// wait for --shutdown-timeout and exit 1: the shutdown closes it at once.
func TestShutdownDoesNotWaitForAHalfSentBody(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	p := startProcess(t, "--store", "memory", "--shutdown-timeout", "5s")
	addr := strings.TrimPrefix(p.base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /elicitations HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"message\":", addr)
	time.Sleep(200 * time.Millisecond) // the request is in, its body half-sent
	start := time.Now()
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit with a half-sent body: %v\n%s", err, p.Output())
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %s with a half-sent body open (--shutdown-timeout 5s)", took)
	}
}

// startLimited starts the binary with at most files open files, as on a
// host whose limit is low, with operator and agent credentials.
func startLimited(t *testing.T, files int, password string, args ...string) *daemonProcess {
	t.Helper()
	shell := fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, files)
	cmd := exec.Command("sh", append([]string{"-c", shell, sharedBinary(t), "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "QUESTIOND_OPERATOR_PASSWORD="+password,
		"QUESTIOND_AGENT_TOKENS=alpha=alpha-token-0123456789")
	p, err := launchDaemon(t, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The attack: stalled connections (headers begun, never finished)
// by the thousand, from the operators' own address, on a host with a low
// open-file limit. The operator's GET /question and the /readyz probe must
// still answer, on new connections, and SIGTERM must still exit 0.
func TestStalledConnectionsUnderALowFileLimitDoNotLockOutTheOperator(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary with thousands of connections")
	const files, stalled = 300, 2000
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err == nil && limit.Cur < stalled+256 {
		t.Skipf("the open-file limit (%d) is too low for %d connections", limit.Cur, stalled)
	}
	p := startLimited(t, files, "operator-password", "--store", "memory")
	addr := strings.TrimPrefix(p.base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range stalled {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // the kernel's queue is full: as stalled as it gets
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /elicitations HTTP/1.1\r\nHost: %s\r\n", addr)
	}
	if len(conns) < files {
		t.Fatalf("only %d connections opened; the test needs more than the daemon's %d files", len(conns), files)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("opencode:operator-password"))
	for _, path := range []string{"/question", "/readyz", "/question", "/readyz"} {
		req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
		req.Header.Set("Authorization", auth)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s with %d stalled connections open: %v\n%s", path, len(conns), err, tail(p.Output()))
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s with %d stalled connections open: %d", path, len(conns), res.StatusCode)
		}
	}
	start := time.Now()
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, tail(p.Output()))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %s", took)
	}
}

// tail is the end of a long log.
func tail(logs string) string {
	if len(logs) > 4000 {
		return "…" + logs[len(logs)-4000:]
	}
	return logs
}

// The connection flags and their environment twins reach the daemon, and
// settings that cannot work are refused by name.
func TestConnectionFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"QUESTIOND_BODY_READ_TIMEOUT": "5s", "QUESTIOND_MAX_CONNECTIONS_PER_AGENT": "7"}
	cfg, err := parseConfig([]string{"--max-connections", "500", "--max-connections-per-address", "20",
		"--operator-reserved-connections", "0", "--store", "memory"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dcfg, err := daemonConfig(cfg, func(string) string { return "" }, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	want := connguard.Options{BodyReadTimeout: 5 * time.Second, MaxConns: 500, MaxConnsPerAddr: 20, MaxConnsPerAgent: 7, OperatorReserve: -1}
	if dcfg.Conns != want {
		t.Errorf("daemon connection options %+v, want %+v", dcfg.Conns, want)
	}
	for args, want := range map[string]string{
		"--body-read-timeout 0":                                     "--body-read-timeout must be positive",
		"--max-connections 0":                                       "--max-connections must be positive",
		"--max-connections-per-agent -1":                            "--max-connections-per-agent must be positive",
		"--max-connections 100 --operator-reserved-connections 100": "--operator-reserved-connections must be at least 0 and less than --max-connections",
		"--operator-reserved-connections -1":                        "--operator-reserved-connections must be at least 0",
	} {
		if _, err := parseConfig(strings.Fields(args), func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", args, err, want)
		}
	}
}
