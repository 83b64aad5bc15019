package pending_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives the tests. The store's
// leak sources are its janitor (runs until Close), the deadline timers' callback
// goroutines (stopped by an ending or by Close; Close waits for any already
// running), the callers blocked in Wait, which must all return once their
// question ends, their ctx ends or the store closes, and a Bolt journal's
// checkpointer (runs until Close).
//
// Started by TestKillNineLosesNoAcknowledgedWrite, the binary is instead the
// writer that test kills.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(crashChild(path))
	}
	goleak.VerifyTestMain(m)
}
