package opencodenpm_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/opencodenpm"
	"github.com/questiond/questiond/internal/testenv"
)

// With nothing cached and no npm on PATH, Install fails and says why, so a
// benchmark or test that needs OpenCode stops instead of running without it.
func TestInstallWithoutNPMFailsNamingIt(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	bin, err := opencodenpm.Install(opencodenpm.Pinned, t.Logf)
	if err == nil {
		t.Fatalf("installed %s without npm", bin)
	}
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "npm") {
		t.Fatalf("error %q does not say npm is missing", err)
	}
}

// The pinned release installs (or is found in the cache) and reports its own
// version.
func TestInstallPinnedRunsThatRelease(t *testing.T) {
	testenv.Heavy(t, "installs opencode-ai from npm on first use")
	if _, err := exec.LookPath("npm"); err != nil {
		testenv.Missing(t, "npm (to install opencode-ai@"+opencodenpm.Pinned+")", "install Node.js 20 and npm")
	}
	bin, err := opencodenpm.Install(opencodenpm.Pinned, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != opencodenpm.Pinned {
		t.Fatalf("%s --version = %q, want %q", bin, got, opencodenpm.Pinned)
	}
}
