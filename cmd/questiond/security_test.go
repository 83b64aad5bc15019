package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestExposedAddressNeedsCredentials(t *testing.T) {
	t.Parallel()
	full := map[string]string{"QUESTIOND_OPERATOR_PASSWORD": "pw", "QUESTIOND_AGENT_TOKENS": "bot=0123456789abcdef0123"}
	for _, c := range []struct {
		addr   string
		env    map[string]string
		args   []string
		refuse bool
	}{
		{"127.0.0.1:4097", nil, nil, false},
		{"localhost:4097", nil, nil, false},
		{"[::1]:4097", nil, nil, false},
		{"0.0.0.0:4097", nil, nil, true},
		{":4097", nil, nil, true},
		{"192.0.2.10:4097", map[string]string{"QUESTIOND_OPERATOR_PASSWORD": "pw"}, nil, true},
		{"[::]:8080", map[string]string{"QUESTIOND_AGENT_TOKENS": full["QUESTIOND_AGENT_TOKENS"]}, nil, true},
		{"0.0.0.0:4097", full, nil, false},
		{"0.0.0.0:4097", nil, []string{"--insecure"}, false},
	} {
		cfg, err := parseConfig(append([]string{"--addr", c.addr}, c.args...), envOf(c.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		warning, err := cfg.checkExposure()
		if c.refuse != (err != nil) {
			t.Errorf("%s %v: refused = %v (%v), want %v", c.addr, c.args, err != nil, err, c.refuse)
		}
		if err != nil {
			wantRefusalFitsContainers(t, c.addr, c.env, err.Error())
		}
		if len(c.args) > 0 && !strings.Contains(warning, "INSECURE") {
			t.Errorf("--insecure without a loud warning: %q", warning)
		}
	}
}

func TestCredentialsFromEnvironmentAndTokenFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(file, []byte("# agents\nbuilder = builder-token-0123456789\n\nreviewer=reviewer-token-012345\n"), 0o600)
	cfg, err := parseConfig([]string{"--agent-token-file", file}, envOf(map[string]string{
		"OPENCODE_SERVER_PASSWORD":    "from-opencode",
		"QUESTIOND_OPERATOR_PASSWORD": "from-questiond",
		"OPENCODE_SERVER_USERNAME":    "alice",
		"QUESTIOND_AGENT_TOKENS":      "ci=ci-token-0123456789abc",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.operatorPassword != "from-questiond" || cfg.operatorUsername != "alice" {
		t.Fatalf("operator %q/%q", cfg.operatorUsername, cfg.operatorPassword)
	}
	want := map[string]string{"ci": "ci-token-0123456789abc", "builder": "builder-token-0123456789", "reviewer": "reviewer-token-012345"}
	if len(cfg.agentTokens) != len(want) {
		t.Fatalf("tokens %v", cfg.agentTokens)
	}
	for k, v := range want {
		if cfg.agentTokens[k] != v {
			t.Fatalf("token of %s: %q", k, cfg.agentTokens[k])
		}
	}
	for env, wantErr := range map[string]string{
		"ci":                         "entry 1 is not name=token",
		"a=x-token-0123456789,a=y-0": `agent "a" is listed twice`,
	} {
		_, err := parseConfig(nil, envOf(map[string]string{"QUESTIOND_AGENT_TOKENS": env}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), wantErr) || strings.Contains(err.Error(), "0123456789") {
			t.Errorf("QUESTIOND_AGENT_TOKENS=%q: %v (must name the problem, not the token)", env, err)
		}
	}
	err = run(context.Background(), []string{"--store", "memory", "--addr", "127.0.0.1:0"},
		envOf(map[string]string{"QUESTIOND_AGENT_TOKENS": "short=abc"}), io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "shorter than 16") {
		t.Errorf("a short token: %v", err)
	}
}

func TestDaemonWithCredentials(t *testing.T) {
	t.Parallel()
	env := map[string]string{"QUESTIOND_OPERATOR_PASSWORD": "s3cret", "QUESTIOND_AGENT_TOKENS": "bot=bot-token-0123456789"}
	base, _ := startDaemon(t, env)
	res, err := http.Get(base + "/question")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Basic realm="Secure Area"` {
		t.Fatalf("GET /question without credentials: %d %v", res.StatusCode, res.Header)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/elicitations", strings.NewReader(twoQuestions))
	req.Header.Set("Authorization", "Bearer bot-token-0123456789")
	req.Header.Set("Content-Type", "application/json")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("agent create: %d", res.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/question", nil)
	req.SetBasicAuth("opencode", "s3cret")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"que_`) {
		t.Fatalf("operator list: %d %s", res.StatusCode, body)
	}
}

func TestServesTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	base, stop := startDaemon(t, nil, "--store", "memory", "--tls-cert", certFile, "--tls-key", keyFile)
	base = strings.Replace(base, "http://", "https://", 1)
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(certFile)
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	res, err := client.Get(base + "/global/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.TLS == nil {
		t.Fatalf("health over TLS: %d, TLS %v", res.StatusCode, res.TLS != nil)
	}

	// An event stream over TLS (its connection taken over by the stream)
	// gets its frames, and ends cleanly when the daemon stops.
	res, err = client.Get(base + "/event")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	next := func() string {
		for lines.Scan() {
			if line := lines.Text(); line != "" {
				return line
			}
		}
		return ""
	}
	if line := next(); !strings.Contains(line, `"server.connected"`) {
		t.Fatalf("first frame over TLS: %q", line)
	}
	created, err := client.Post(base+"/elicitations", "application/json", strings.NewReader(twoQuestions))
	if err != nil {
		t.Fatal(err)
	}
	created.Body.Close()
	if line := next(); !strings.Contains(line, `"question.asked"`) {
		t.Fatalf("frame after a create over TLS: %q", line)
	}
	if err := stop(); err != nil {
		t.Fatalf("stopping the daemon with a TLS stream open: %v", err)
	}
	for line := next(); line != ""; line = next() {
		if !strings.Contains(line, `"question.rejected"`) && !strings.Contains(line, `"server.heartbeat"`) {
			t.Errorf("frame after stop: %q", line)
		}
	}
	if err := lines.Err(); err != nil {
		t.Errorf("the TLS stream did not end cleanly: %v", err)
	}
	if _, err := parseConfig([]string{"--tls-cert", certFile}, envOf(nil), io.Discard); err == nil {
		t.Fatal("--tls-cert without --tls-key was accepted")
	}
}

func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	der, key := testkit.SelfSigned(t)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

// wantRefusalFitsContainers checks the refusal to listen beyond loopback
// without credentials: one line naming the variables still missing (and
// only those), how to pass them to a container, and the loopback address,
// which outside a container is the other way out.
func wantRefusalFitsContainers(t *testing.T, addr string, env map[string]string, msg string) {
	t.Helper()
	if strings.Contains(msg, "\n") {
		t.Errorf("refusal of %s is more than one line: %q", addr, msg)
	}
	_, port, _ := net.SplitHostPort(addr)
	for _, want := range []string{"refusing to listen on " + addr, "docker run -e ", "127.0.0.1:" + port, "--insecure"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal of %s: %q does not say %q", addr, msg, want)
		}
	}
	for _, name := range []string{"QUESTIOND_OPERATOR_PASSWORD", "QUESTIOND_AGENT_TOKENS"} {
		named := strings.Contains(msg, "-e "+name)
		if missing := env[name] == ""; named != missing {
			t.Errorf("refusal of %s with %v: names -e %s: %v, want %v: %q", addr, env, name, named, missing, msg)
		}
	}
}
