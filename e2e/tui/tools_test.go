package tui

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// pinnedOpencode is the OpenCode release the console is tested with (see
// README, "Answer in the OpenCode TUI"); QUESTIOND_TUI_VERSION (make tui
// OPENCODE=x.y.z) tries another release before the pin moves.
const pinnedOpencode = "1.18.33"

var opencodeVersion = cmp.Or(os.Getenv("QUESTIOND_TUI_VERSION"), pinnedOpencode)

var (
	opencodeOnce sync.Once
	opencodePath string
	opencodeErr  error

	tmuxOnce sync.Once
	tmuxErr  error
)

// opencodeBinary returns the pinned OpenCode binary, installing it from npm
// into the user's cache directory on first use; later runs reuse it.
func opencodeBinary(t *testing.T) string {
	t.Helper()
	opencodeOnce.Do(func() { opencodePath, opencodeErr = installOpencode(t) })
	if opencodeErr != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			testenv.Missing(t, "npm (to install opencode-ai@"+opencodeVersion+")", "install Node.js 20 and npm")
		}
		t.Fatal(opencodeErr)
	}
	return opencodePath
}

func installOpencode(t *testing.T) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the OpenCode install: %w", err)
	}
	prefix := filepath.Join(cache, "questiond-test", "opencode-ai@"+opencodeVersion)
	bin := filepath.Join(prefix, "node_modules", "opencode-linux-x64", "bin", "opencode")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", err
	}
	// Install beside the final place and rename, so an interrupted install
	// never looks like a finished one.
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(prefix), "install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	npm := exec.Command("npm", "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", "opencode-ai@"+opencodeVersion)
	if out, err := npm.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install opencode-ai@%s: %v\n%s", opencodeVersion, err, out)
	}
	t.Logf("installed opencode-ai@%s in %s (into %s)", opencodeVersion, time.Since(start).Round(time.Second), prefix)
	if _, err := os.Stat(filepath.Join(tmp, "node_modules", "opencode-linux-x64", "bin", "opencode")); err != nil {
		return "", fmt.Errorf("npm installed opencode-ai@%s without the linux-x64 binary: %w", opencodeVersion, err)
	}
	if err := os.Rename(tmp, prefix); err != nil {
		if _, statErr := os.Stat(bin); statErr == nil {
			return bin, nil // another test run finished its install first
		}
		return "", fmt.Errorf("moving the OpenCode install into place: %w", err)
	}
	return bin, nil
}

// needTmux makes sure tmux runs here: when it is missing and the tests run
// as root on Debian (as CI does), it is installed with apt-get.
func needTmux(t *testing.T) {
	t.Helper()
	tmuxOnce.Do(func() {
		if _, err := exec.LookPath("tmux"); err == nil {
			return
		}
		if os.Geteuid() != 0 {
			tmuxErr = fmt.Errorf("not root, so it cannot be installed here")
			return
		}
		if _, err := exec.LookPath("apt-get"); err != nil {
			tmuxErr = fmt.Errorf("no apt-get to install it with")
			return
		}
		for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "tmux"}} {
			cmd := exec.Command("apt-get", args...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				tmuxErr = fmt.Errorf("apt-get %v: %v\n%s", args, err, out)
				return
			}
		}
		_, tmuxErr = exec.LookPath("tmux")
	})
	if tmuxErr != nil {
		testenv.Missing(t, "tmux", "apt-get install tmux ("+tmuxErr.Error()+")")
	}
}
