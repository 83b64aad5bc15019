package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

// runHealth runs `questiond health args` with env and returns its status
// and output.
func runHealth(t *testing.T, env map[string]string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = health(context.Background(), args, envOf(env), &out, &errOut)
	return status, out.String(), errOut.String()
}

// wantOneLine checks a failure is one line naming what is wrong.
func wantOneLine(t *testing.T, what string, status int, stderr string, mentions ...string) {
	t.Helper()
	if status != healthFailed {
		t.Errorf("%s: status %d, want %d", what, status, healthFailed)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "questiond health: ") {
		t.Errorf("%s: stderr %q, want one line", what, stderr)
	}
	for _, m := range mentions {
		if !strings.Contains(stderr, m) {
			t.Errorf("%s: stderr %q does not mention %q", what, stderr, m)
		}
	}
}

// A healthy daemon, found as the daemon finds its own address: from --addr
// or QUESTIOND_ADDR. With credentials configured the probe sends none, and
// is still answered.
func TestHealthCommandFindsAHealthyDaemon(t *testing.T) {
	t.Parallel()
	creds := map[string]string{"QUESTIOND_OPERATOR_PASSWORD": "op-password-0123", "QUESTIOND_AGENT_TOKENS": "bot=0123456789abcdef0123"}
	for _, env := range []map[string]string{nil, creds} {
		base, _ := startDaemon(t, env, "--store", "memory")
		addr := strings.TrimPrefix(base, "http://")
		status, stdout, stderr := runHealth(t, nil, "--addr", addr)
		if status != healthOK || stderr != "" || !strings.Contains(stdout, "healthy") {
			t.Errorf("--addr %s (credentials %v): status %d, stdout %q, stderr %q", addr, env != nil, status, stdout, stderr)
		}
		if showsVersion := strings.Contains(stdout, "version "+version); showsVersion != (env == nil) {
			t.Errorf("credentials %v: stdout %q; the version shows only where no credentials are configured", env != nil, stdout)
		}
		if status, stdout, _ := runHealth(t, map[string]string{"QUESTIOND_ADDR": addr}); status != healthOK {
			t.Errorf("QUESTIOND_ADDR=%s: status %d %q", addr, status, stdout)
		}
	}
}

// Addresses of every interface are probed on loopback; a bad address is
// refused in one line saying what is wanted.
func TestHealthCommandProbesLoopbackForEveryInterface(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"0.0.0.0:4097":   "http://127.0.0.1:4097/global/health",
		":4097":          "http://127.0.0.1:4097/global/health",
		"[::]:4097":      "http://[::1]:4097/global/health",
		"10.1.2.3:8080":  "http://10.1.2.3:8080/global/health",
		"localhost:4097": "http://localhost:4097/global/health",
	} {
		p, err := parseHealth([]string{"--addr", addr}, envOf(nil), &bytes.Buffer{})
		if err != nil || p.url != want {
			t.Errorf("--addr %s: %v %v, want %s", addr, p, err, want)
		}
	}
	for _, addr := range []string{"4602", "host", "127.0.0.1:0", "127.0.0.1:99999"} {
		status, _, stderr := runHealth(t, nil, "--addr", addr)
		wantOneLine(t, "--addr "+addr, status, stderr, "host:port", addr)
	}
	status, _, stderr := runHealth(t, nil, "--timeout", "soon")
	wantOneLine(t, "--timeout soon", status, stderr, "--timeout", "duration")
}

// Every way a probe can fail is status 1 and one line saying why.
func TestHealthCommandFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	status, _, stderr := runHealth(t, nil, "--addr", closed)
	wantOneLine(t, "nothing listening", status, stderr, "nothing answers at", closed, "QUESTIOND_ADDR")

	// Accepts, never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := silent.Accept()
		if err == nil {
			held <- c
		}
	}()
	status, _, stderr = runHealth(t, nil, "--addr", silent.Addr().String(), "--timeout", "200ms")
	wantOneLine(t, "a silent server", status, stderr, "no answer", "200ms")
	select {
	case c := <-held:
		c.Close()
	default:
	}

	// Something else on the port.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/global/health" {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("down\nfor maintenance"))
			return
		}
		http.NotFound(w, r)
	}))
	defer other.Close()
	status, _, stderr = runHealth(t, nil, "--addr", strings.TrimPrefix(other.URL, "http://"))
	wantOneLine(t, "a 503", status, stderr, "503", "down for maintenance")
}

// A daemon serving TLS is probed with HTTPS, trusting exactly its own
// certificate (which names its public host, not loopback).
func TestHealthCommandOverTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	base, _ := startDaemon(t, nil, "--store", "memory", "--tls-cert", certFile, "--tls-key", keyFile)
	addr := strings.TrimPrefix(base, "http://")
	env := map[string]string{"QUESTIOND_ADDR": addr, "QUESTIOND_TLS_CERT": certFile}
	if status, stdout, stderr := runHealth(t, env); status != healthOK || !strings.Contains(stdout, "https://") {
		t.Errorf("over TLS: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	status, _, stderr := runHealth(t, nil, "--addr", addr)
	wantOneLine(t, "HTTP to a TLS daemon", status, stderr, "400")

	otherCert, _ := writeSelfSigned(t, t.TempDir())
	status, _, stderr = runHealth(t, nil, "--addr", addr, "--tls-cert", otherCert)
	wantOneLine(t, "another certificate", status, stderr, "another certificate than --tls-cert")
}

// The real binary: a healthy daemon is 0, nothing listening is 1 with one
// clear line on stderr.
func TestHealthCommandProcess(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "builds and runs the binary")
	p := startProcess(t, "--store", "memory")
	out, err := exec.Command(sharedBinary(t), "health", "--addr", strings.TrimPrefix(p.base, "http://")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "healthy") {
		t.Errorf("healthy daemon: %v %q", err, out)
	}
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sharedBinary(t), "health", "--addr", strings.TrimPrefix(p.base, "http://"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("stopped daemon: %v, want exit status 1", err)
	}
	if strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "nothing answers at") || stdout.Len() != 0 {
		t.Errorf("stopped daemon: stdout %q, stderr %q, want one line saying nothing answers", stdout.String(), stderr.String())
	}
}
