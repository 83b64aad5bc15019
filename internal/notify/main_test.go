package notify_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives the tests. The
// notifier's leak sources are its endpoint workers (stopped by Close), the
// attempts in flight (cancelled by Close) and its transport's idle
// connections (closed by Close).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
