package httpapi_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Leak sources this guards: event stream handlers and their writer goroutines,
// POST /elicit waiters, store timers, and httptest servers left open.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
