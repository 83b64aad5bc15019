package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// Leak sources this guards: event-stream readers, operator reply workers,
// agents, both servers' handlers and the transports' connection goroutines,
// all of which every test and sub-benchmark must close before the next.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
