// Package deploy holds the tests of the deployment files beside it: the
// systemd unit here; docker-compose.yml and haproxy.cfg are run by
// e2e/replicas. It has no code of its own.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// unitSettings are the unit file's Key=Value lines of section ("Service"),
// in order; a key may repeat.
func unitSettings(t *testing.T, unit, section string) [][2]string {
	t.Helper()
	var settings [][2]string
	in := false
	for _, line := range strings.Split(unit, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			in = line == "["+section+"]"
		case in:
			key, value, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("questiond.service: %q is not Key=Value", line)
			}
			settings = append(settings, [2]string{key, value})
		}
	}
	return settings
}

// setting is the last value the unit gives key in [Service], or "".
func setting(settings [][2]string, key string) string {
	value := ""
	for _, kv := range settings {
		if kv[0] == key {
			value = kv[1]
		}
	}
	return value
}

// The systemd unit is one systemd accepts as it is — systemd-analyze
// verify reports nothing, not even a key it would ignore — with the
// hardening it promises, and it starts questiond as written: its ExecStart
// and Environment lines (the binary under test in place of
// /usr/local/bin/questiond, %S a temporary directory) run a daemon that
// keeps its database in the state directory and stops cleanly on the
// unit's KillSignal well within TimeoutStopSec.
func TestSystemdUnitVerifiesAndStartsQuestiond(t *testing.T) {
	testenv.Heavy(t, "runs systemd-analyze and the questiond binary")
	analyze := testenv.NeedDebianPackage(t, "systemd", "systemd-analyze")
	data, err := os.ReadFile("questiond.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(data)
	service := unitSettings(t, unit, "Service")
	for key, want := range map[string]string{
		"DynamicUser":     "yes",
		"StateDirectory":  "questiond",
		"ProtectSystem":   "strict",
		"ProtectHome":     "yes",
		"NoNewPrivileges": "yes",
		"KillSignal":      "SIGTERM",
	} {
		if got := setting(service, key); got != want {
			t.Errorf("questiond.service: %s=%q, want %q", key, got, want)
		}
	}
	const installed = "/usr/local/bin/questiond"
	execStart := strings.Fields(setting(service, "ExecStart"))
	if len(execStart) == 0 || execStart[0] != installed {
		t.Fatalf("questiond.service: ExecStart=%q, want %s and its flags", execStart, installed)
	}

	bin := testkit.Binary(t)
	dir := t.TempDir()
	verified := filepath.Join(dir, "questiond.service")
	if err := os.WriteFile(verified, []byte(strings.ReplaceAll(unit, installed, bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", verified)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "questiond.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	// The daemon, as the unit starts it.
	state := filepath.Join(dir, "state")
	env := os.Environ()
	dataDir := ""
	for _, kv := range service {
		if kv[0] != "Environment" {
			continue
		}
		value := strings.ReplaceAll(strings.Trim(kv[1], `"`), "%S", state)
		env = append(env, value)
		if v, ok := strings.CutPrefix(value, "QUESTIOND_DATA_DIR="); ok {
			dataDir = v
		}
	}
	if want := filepath.Join(state, setting(service, "StateDirectory")); dataDir != want {
		t.Fatalf("questiond.service: QUESTIOND_DATA_DIR is %q, want the StateDirectory, %%S/%s", dataDir, setting(service, "StateDirectory"))
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil { // systemd makes it
		t.Fatal(err)
	}
	// A free loopback port and no metrics listener: other tests run beside.
	env = append(env, "QUESTIOND_ADDR=127.0.0.1:0", "QUESTIOND_METRICS_ADDR=off")
	run := exec.Command(bin, execStart[1:]...)
	run.Env = env
	stop, err := time.ParseDuration(setting(service, "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("questiond.service: TimeoutStopSec: %v", err)
	}
	p, err := launch.Start(run, launch.Options{Name: "questiond as the unit runs it", StopTimeout: stop / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if _, err := os.Stat(filepath.Join(dataDir, "questiond.db")); err != nil {
		t.Errorf("the database is not in the state directory: %v\n%s", err, p.Output())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("stopping as systemd does: %v", err)
	}
	if !strings.Contains(p.Output(), `"msg":"stopped"`) {
		t.Errorf("questiond did not log its clean stop:\n%s", p.Output())
	}
}

// docker-compose.yml builds the image from this repository and mounts the
// haproxy.cfg beside it: the files it names are there. (e2e/replicas runs
// its replicas' command and that haproxy.cfg.)
func TestComposeNamesFilesThatExist(t *testing.T) {
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XQuestiond struct {
			Build string `yaml:"build"`
		} `yaml:"x-questiond"`
		Services map[string]struct {
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if _, err := os.Stat(filepath.Join(doc.XQuestiond.Build, "Dockerfile")); err != nil {
		t.Errorf("docker-compose.yml builds from %q: %v", doc.XQuestiond.Build, err)
	}
	mounted := 0
	for name, svc := range doc.Services {
		for _, v := range svc.Volumes {
			host, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(host, "./") || host == "./certs" { // the certificate is the operator's
				continue
			}
			mounted++
			if _, err := os.Stat(host); err != nil {
				t.Errorf("docker-compose.yml: %s mounts %s: %v", name, host, err)
			}
		}
	}
	if mounted == 0 {
		t.Error("docker-compose.yml mounts no file of deploy/: the balancer has no haproxy.cfg")
	}
}
