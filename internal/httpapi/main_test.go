package httpapi_test

import (
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

// Leak sources this guards: event stream handlers and their writer goroutines,
// POST /elicit waiters, store timers, and httptest servers left open.
func TestMain(m *testing.M) {
	testkit.Main(m)
}

// onPostgres reports whether the suite runs on the PostgreSQL store
// (QUESTIOND_TEST_STORE=postgres): every harness without a journal of its
// own gets a fresh database, as a replica of one.
func onPostgres() bool { return testkit.OnPostgres() }

// memoryOnly skips a test of what only the memory store does (ending every
// pending question at shutdown) when the suite runs on PostgreSQL.
func memoryOnly(t *testing.T) {
	t.Helper()
	if onPostgres() {
		t.Skip("memory store behaviour; the suite runs on PostgreSQL")
	}
}
