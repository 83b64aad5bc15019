package client_test

import (
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

// Leak sources this guards: Elicit's long-polls and retry timers, the
// in-process questiond (its event streams, store timers and HTTP server), the
// test proxies' copy goroutines, and idle HTTP connections of the clients.
func TestMain(m *testing.M) {
	testkit.Main(m)
}

// databaseURL is a fresh PostgreSQL database for t's questiond when the
// suite runs on the PostgreSQL store (QUESTIOND_TEST_STORE=postgres), else "".
func databaseURL(t *testing.T) string { return testkit.DatabaseURL(t) }
