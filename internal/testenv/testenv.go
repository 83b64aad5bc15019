// Package testenv decides where a test runs: heavy tests skip under
// `go test -short`, and a test whose tool or service is missing fails under
// CI=true instead of skipping.
//
// Heavy means anything that takes seconds or needs more than the Go
// toolchain: the real binary as a process, soak tests, a browser, the
// OpenCode TUI, PostgreSQL. `go test -short ./...` is the quick loop while
// editing; `make test` (what CI runs) runs everything, with no -short.
package testenv

import (
	"os"
	"testing"
)

// Heavy skips t under `go test -short`; what says why the test is heavy
// ("runs the real binary", "60 s soak").
func Heavy(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("heavy (%s): skipped with -short", what)
	}
}

// InCI reports whether the tests run in CI (CI=true), where nothing a test
// needs may be missing.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing reports that what the test needs is not there: under CI it fails
// the test, elsewhere it skips it. how says how to get it.
func Missing(t testing.TB, what, how string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is missing (CI=true, so this is a failure, not a skip): %s", what, how)
	}
	t.Skipf("%s is missing: %s (under CI=true this fails)", what, how)
}
