package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Pane size of every TUI, so captures compare across runs.
const (
	paneWidth  = 160
	paneHeight = 45
)

// screenTimeout bounds every wait for the screen to show something.
const screenTimeout = 30 * time.Second

// tui is the real OpenCode TUI attached to a questiond, running in a tmux
// server of its own. Every capture is saved as an artifact named by step.
type tui struct {
	t       *testing.T
	name    string // names its log and captures among a test's TUIs
	socket  string // tmux -L name
	dir     string
	logPath string
	pidPath string
	shots   int
}

// attach runs `opencode attach URL args…` in a private tmux server, offline
// and with its own HOME and XDG directories; name tells its log and captures
// apart. Everything it starts is killed when the test ends.
func attach(t *testing.T, name, url string, args ...string) *tui {
	t.Helper()
	needTmux(t)
	bin := opencodeBinary(t)
	// Not t.TempDir: the TUI shows its directory, and a test's name in it
	// would match what tests look for on screen.
	dir, err := os.MkdirTemp("", "qd-tui-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, sub := range []string{"home", "config", "data", "cache", "state", "proj"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u := &tui{
		t:       t,
		name:    name,
		socket:  fmt.Sprintf("qd-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()),
		dir:     dir,
		logPath: filepath.Join(t.ArtifactDir(), name+"-opencode.log"),
		pidPath: filepath.Join(dir, "tui.pid"),
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	// The spike's offline settings: no update check, no models.dev fetch, no
	// LSP or plugin downloads, no telemetry, npm pointed at a closed port.
	script := strings.Join([]string{
		"#!/bin/sh",
		"export HOME=" + shellQuote(filepath.Join(dir, "home")),
		"export XDG_CONFIG_HOME=" + shellQuote(filepath.Join(dir, "config")),
		"export XDG_DATA_HOME=" + shellQuote(filepath.Join(dir, "data")),
		"export XDG_CACHE_HOME=" + shellQuote(filepath.Join(dir, "cache")),
		"export XDG_STATE_HOME=" + shellQuote(filepath.Join(dir, "state")),
		"export OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"export OPENCODE_DISABLE_SHARE=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 DO_NOT_TRACK=1",
		"export npm_config_registry=http://127.0.0.1:9/ NPM_CONFIG_REGISTRY=http://127.0.0.1:9/",
		"cd " + shellQuote(filepath.Join(dir, "proj")),
		"echo $$ > " + shellQuote(u.pidPath),
		"exec " + shellQuote(bin) + " attach " + shellQuote(url) + " " + strings.Join(quoted, " ") +
			" --print-logs --log-level DEBUG 2>> " + shellQuote(u.logPath),
		"",
	}, "\n")
	scriptPath := filepath.Join(dir, "attach.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// remain-on-exit keeps the pane (and what it printed) when the TUI
	// exits, so an exit can be captured and told apart from a crash.
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g history-limit 5000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.kill)
	u.tmux("-f", conf, "new-session", "-d", "-s", "tui", "-x", strconv.Itoa(paneWidth), "-y", strconv.Itoa(paneHeight), scriptPath)
	return u
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (u *tui) tmux(args ...string) string {
	u.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", u.socket}, args...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		u.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// kill ends the TUI's process group and the tmux server.
func (u *tui) kill() {
	if data, err := os.ReadFile(u.pidPath); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			// The pane's process leads its own process group (tmux
			// starts panes with setsid), so this ends OpenCode and
			// anything it started.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	cmd := exec.Command("tmux", "-L", u.socket, "kill-server")
	cmd.Env = cleanEnv()
	_ = cmd.Run()
	// OpenCode writes its own log files under XDG_DATA_HOME; keep them.
	logs, _ := filepath.Glob(filepath.Join(u.dir, "data", "opencode", "log", "*.log"))
	for _, l := range logs {
		if data, err := os.ReadFile(l); err == nil {
			_ = os.WriteFile(filepath.Join(u.t.ArtifactDir(), u.name+"-opencode-"+filepath.Base(l)), data, 0o644)
		}
	}
}

// capture returns the pane's text now.
func (u *tui) capture() string {
	u.t.Helper()
	return u.tmux("capture-pane", "-p", "-t", "tui")
}

// save writes a capture as the next numbered artifact named by step.
func (u *tui) save(step, screen string) {
	u.t.Helper()
	u.shots++
	name := fmt.Sprintf("%s-%02d-%s.txt", u.name, u.shots, step)
	if err := os.WriteFile(filepath.Join(u.t.ArtifactDir(), name), []byte(screen), 0o644); err != nil {
		u.t.Fatal(err)
	}
}

// waitFor polls the pane until it shows every fragment, saves that screen
// as step, and returns it; past the deadline the test fails with the screen.
func (u *tui) waitFor(step string, fragments ...string) string {
	u.t.Helper()
	return u.waitUntil(step, fmt.Sprintf("the screen to show %q", fragments), func(s string) bool {
		for _, f := range fragments {
			if !strings.Contains(s, f) {
				return false
			}
		}
		return true
	})
}

// waitGone polls until no fragment shows any more.
func (u *tui) waitGone(step string, fragments ...string) string {
	u.t.Helper()
	return u.waitUntil(step, fmt.Sprintf("the screen to stop showing %q", fragments), func(s string) bool {
		for _, f := range fragments {
			if strings.Contains(s, f) {
				return false
			}
		}
		return true
	})
}

func (u *tui) waitUntil(step, what string, ok func(string) bool) string {
	u.t.Helper()
	deadline := time.Now().Add(screenTimeout)
	for {
		s := u.capture()
		if ok(s) {
			u.save(step, s)
			return s
		}
		if time.Now().After(deadline) {
			u.save(step+"-FAILED", s)
			u.t.Fatalf("step %s: waited %s for %s; the screen:\n%s", step, screenTimeout, what, trimScreen(s))
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// shot saves the screen as it is now.
func (u *tui) shot(step string) string {
	u.t.Helper()
	s := u.capture()
	u.save(step, s)
	return s
}

// keys sends tmux key names one by one, with a short pause after each: the
// TUI batches input that arrives at once.
func (u *tui) keys(keys ...string) {
	u.t.Helper()
	for _, k := range keys {
		u.tmux("send-keys", "-t", "tui", k)
		time.Sleep(400 * time.Millisecond)
	}
}

// typeText types text literally.
func (u *tui) typeText(text string) {
	u.t.Helper()
	u.tmux("send-keys", "-t", "tui", "-l", text)
	time.Sleep(400 * time.Millisecond)
}

// exited reports whether the TUI's process has exited, and its status.
func (u *tui) exited() (bool, string) {
	u.t.Helper()
	out := strings.Fields(u.tmux("display-message", "-p", "-t", "tui", "#{pane_dead} #{pane_dead_status}"))
	if len(out) == 0 || out[0] != "1" {
		return false, ""
	}
	if len(out) > 1 {
		return true, out[1]
	}
	return true, ""
}

// log is the TUI's own log (--print-logs) so far.
func (u *tui) log() string {
	data, _ := os.ReadFile(u.logPath)
	return string(data)
}

// trimScreen drops blank lines and trailing spaces, for failure messages.
func trimScreen(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, " "); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
