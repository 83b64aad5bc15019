package bench

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/pgtest"
)

// Leak sources this guards: event-stream readers, operator reply workers,
// agents, both servers' handlers and the transports' connection goroutines,
// all of which every test and sub-benchmark must close before the next.
//
// With serveEnv set the binary is not a test run but a server process started
// by the idle-subscriber benchmark (see serveChild).
func TestMain(m *testing.M) {
	if which := os.Getenv(serveEnv); which != "" {
		os.Exit(serveChild(which))
	}
	goleak.VerifyTestMain(withPostgres{m})
}

// withPostgres runs the tests, then stops the PostgreSQL server the store
// benchmarks started, if any.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return pgtest.Run(w.m) }
