package client_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Leak sources this guards: Elicit's long-polls and retry timers, the
// in-process questiond (its event streams, store timers and HTTP server), the
// test proxies' copy goroutines, and idle HTTP connections of the clients.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
