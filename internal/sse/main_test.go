package sse_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives the tests. The leak
// sources are the broker's heartbeat goroutine (until Close), a handler
// that never learns its client left or was cut off (it would keep net/http's
// connection goroutines too), and the tests' own stream readers and
// in-process handlers (until their connection or context is closed).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
