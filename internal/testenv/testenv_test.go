package testenv_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

// The helpers act on the test that calls them, so they are checked by
// running this package's test binary again with a helper-only test selected.
const childEnv = "TESTENV_CHILD"

func TestChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "heavy":
		testenv.Heavy(t, "a child")
	case "missing":
		testenv.Missing(t, "a tool", "install it")
	default:
		t.Skip("only runs as a child of the tests below")
	}
}

func runChild(t *testing.T, mode string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestChild$", "-test.v"}, args...)...)
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestHeavySkipsOnlyUnderShort(t *testing.T) {
	t.Parallel()
	out, err := runChild(t, "heavy", nil, "-test.short")
	if err != nil || !strings.Contains(out, "--- SKIP: TestChild") {
		t.Fatalf("with -short: err %v, output:\n%s", err, out)
	}
	out, err = runChild(t, "heavy", nil)
	if err != nil || !strings.Contains(out, "--- PASS: TestChild") {
		t.Fatalf("without -short: err %v, output:\n%s", err, out)
	}
}

func TestMissingFailsInCIAndSkipsElsewhere(t *testing.T) {
	t.Parallel()
	out, err := runChild(t, "missing", []string{"CI=true"})
	if err == nil || !strings.Contains(out, "--- FAIL: TestChild") || !strings.Contains(out, "install it") {
		t.Fatalf("CI=true: err %v, output:\n%s", err, out)
	}
	out, err = runChild(t, "missing", []string{"CI="})
	if err != nil || !strings.Contains(out, "--- SKIP: TestChild") {
		t.Fatalf("outside CI: err %v, output:\n%s", err, out)
	}
}
