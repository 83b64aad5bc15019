package session_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives the tests: a Registry
// starts none, so any survivor is a caller still blocked on it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
