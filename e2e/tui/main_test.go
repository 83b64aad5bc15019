package tui

import (
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

// daemonBinary is cmd/questiond, built on first use (testkit.Binary, shared
// with the other suites), so that `go test -short` and `go test -list`
// build nothing.
func daemonBinary(t *testing.T) string { return testkit.Binary(t) }
