package mcpelicit_test

import (
	"net/http"
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
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	c, err := client.New(client.Options{Server: server.URL, HTTPClient: &http.Client{Transport: transport}, PollWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return server.URL, c
}
