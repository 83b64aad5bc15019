package mcpelicit_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Leak sources this guards: MCP sessions over in-memory transports, the
// handler's Elicit long-polls, the in-process questiond and its event streams.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
