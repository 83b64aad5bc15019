package mcpelicit_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/pgtest"
)

// Leak sources this guards: MCP sessions over in-memory transports, the
// handler's Elicit long-polls, the in-process questiond and its event streams.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withPostgres{m})
}

// withPostgres runs the tests, then stops the PostgreSQL server they
// started, if any.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return pgtest.Run(w.m) }

// databaseURL is a fresh PostgreSQL database for t's questiond when the
// suite runs on the PostgreSQL store (QUESTIOND_TEST_STORE=postgres), else "".
func databaseURL(t *testing.T) string {
	if os.Getenv("QUESTIOND_TEST_STORE") != "postgres" {
		return ""
	}
	return pgtest.Database(t)
}
