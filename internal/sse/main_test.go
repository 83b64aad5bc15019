package sse_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives the tests. The leak
// sources are the broker's heartbeat goroutine (until Close), r3labs' run loop
// per stream (until the last subscriber left after Close), r3labs' watcher per
// connection (until it has unsubscribed), each subscriber's writer goroutine,
// and the tests' own stream readers (until their connection is closed).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
