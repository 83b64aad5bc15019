package testkit

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

// GoList runs `go list -f format pkgs...` with the go tool on PATH (a
// missing one fails the test under CI=true, and skips it elsewhere) and
// returns its output split into fields.
func GoList(t testing.TB, format string, pkgs ...string) []string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go tool", "put Go's bin directory on PATH")
	}
	out, err := exec.Command(gotool, append([]string{"list", "-f", format}, pkgs...)...).Output()
	if err != nil {
		var exit *exec.ExitError
		var stderr []byte
		if errors.As(err, &exit) {
			stderr = exit.Stderr
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(pkgs, " "), err, stderr)
	}
	return strings.Fields(string(out))
}
