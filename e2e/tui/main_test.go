package tui

import (
	"os"
	"testing"

	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
)

// TestMain runs the tests, or, started as the upstream MCP server behind
// `questiond bridge` (opencodeserve.Upstream), serves that instead.
func TestMain(m *testing.M) {
	if opencodeserve.ServeUpstream() {
		return
	}
	os.Exit(m.Run())
}

// daemonBinary is cmd/questiond, built on first use (testkit.Binary, shared
// with the other suites), so that `go test -short` and `go test -list`
// build nothing.
func daemonBinary(t *testing.T) string { return testkit.Binary(t) }
