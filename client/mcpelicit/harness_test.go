package mcpelicit_test

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testserver"
)

// startDaemon runs a real questiond (memory store) for the test and returns
// its URL and a client of it.
func startDaemon(t *testing.T) (string, *client.Client) {
	t.Helper()
	server := testkit.Serve(t, testserver.Config{
		Events:      sse.Options{Heartbeat: time.Hour},
		Logger:      zaptest.NewLogger(t),
		DatabaseURL: databaseURL(t),
	})
	return server.URL, testkit.Agent(t, server.URL, "")
}
