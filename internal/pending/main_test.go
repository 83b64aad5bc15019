package pending_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives the tests. The store's
// leak sources are its janitor (runs until Close), the deadline timers' callback
// goroutines (stopped by an ending or by Close; Close waits for any already
// running), and the callers blocked in Wait, which must all return once their
// question ends, their ctx ends or the store closes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
