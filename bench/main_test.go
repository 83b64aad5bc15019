package bench

import (
	"os"
	"testing"

	"github.com/questiond/questiond/internal/testkit"
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
	testkit.Main(m)
}
