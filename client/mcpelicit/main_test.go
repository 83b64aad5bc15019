package mcpelicit_test

import (
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

// Leak sources this guards: MCP sessions over in-memory transports, the
// handler's Elicit long-polls, the in-process questiond and its event streams.
func TestMain(m *testing.M) {
	testkit.Main(m)
}

// databaseURL is a fresh PostgreSQL database for t's questiond when the
// suite runs on the PostgreSQL store (QUESTIOND_TEST_STORE=postgres), else "".
func databaseURL(t *testing.T) string { return testkit.DatabaseURL(t) }
