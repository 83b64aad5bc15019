// Package opencodenpm installs a pinned opencode-ai release from npm into the
// user's cache directory, once, for the tests and benchmarks that run the
// real OpenCode.
package opencodenpm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Pinned is the OpenCode release questiond is tested and measured against
// (see docs/tui.md).
const Pinned = "1.18.33"

// binaryPath is where npm puts the linux-x64 binary inside an install prefix.
func binaryPath(prefix string) string {
	return filepath.Join(prefix, "node_modules", "opencode-linux-x64", "bin", "opencode")
}

// Install returns the opencode binary of release version, installing
// opencode-ai@version with npm into the user's cache directory
// (questiond-test/opencode-ai@version) when it is not there yet; later calls
// and later runs reuse it. logf, when not nil, hears how long an install
// took. The error says what failed; it wraps exec.ErrNotFound when npm is
// missing.
func Install(version string, logf func(format string, args ...any)) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the OpenCode install: %w", err)
	}
	prefix := filepath.Join(cache, "questiond-test", "opencode-ai@"+version)
	bin := binaryPath(prefix)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm, to install opencode-ai@%s: %w", version, err)
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
	cmd := exec.Command(npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", "opencode-ai@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install opencode-ai@%s: %v\n%s", version, err, out)
	}
	if logf != nil {
		logf("installed opencode-ai@%s in %s (into %s)", version, time.Since(start).Round(time.Second), prefix)
	}
	if _, err := os.Stat(binaryPath(tmp)); err != nil {
		return "", fmt.Errorf("npm installed opencode-ai@%s without the linux-x64 binary: %w", version, err)
	}
	if err := os.Rename(tmp, prefix); err != nil {
		if _, statErr := os.Stat(bin); statErr == nil {
			return bin, nil // another run finished its install first
		}
		return "", fmt.Errorf("moving the OpenCode install into place: %w", err)
	}
	return bin, nil
}
