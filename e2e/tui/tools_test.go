package tui

import (
	"cmp"
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
	testenv.NeedDebianPackage(t, "tmux", "tmux")
}
