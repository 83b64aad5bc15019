package opencode

import (
	"testing"

	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
)

// Leak sources this guards: the in-process questiond and its event
// streams, the fake model's server, the HTTP clients' connections. Started
// as the upstream MCP server (opencodeserve.Upstream), the binary serves
// that instead.
func TestMain(m *testing.M) {
	if opencodeserve.ServeUpstream() {
		return
	}
	testkit.Main(m)
}
