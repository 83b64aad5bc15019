package tui

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/opencodenpm"
	"github.com/questiond/questiond/internal/testenv"
)

// opencodeVersion is the OpenCode release the console is tested with;
// QUESTIOND_TUI_VERSION (make tui OPENCODE=x.y.z) tries another release
// before the pin moves.
var opencodeVersion = cmp.Or(os.Getenv("QUESTIOND_TUI_VERSION"), opencodenpm.Pinned)

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
	opencodeOnce.Do(func() { opencodePath, opencodeErr = opencodenpm.Install(opencodeVersion, t.Logf) })
	if opencodeErr != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			testenv.Missing(t, "npm (to install opencode-ai@"+opencodeVersion+")", "install Node.js 20 and npm")
		}
		t.Fatal(opencodeErr)
	}
	return opencodePath
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
