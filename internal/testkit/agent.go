package testkit

import (
	"net/http"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
)

// Agent is a Go client of the questiond at server, as an agent with token
// ("" for none), long-polling 5 s at a time; its idle connections are
// closed when the test ends, so that leak checks see none.
func Agent(tb testing.TB, server, token string) *client.Client {
	tb.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	tb.Cleanup(transport.CloseIdleConnections)
	c, err := client.New(client.Options{Server: server, Token: token, HTTPClient: &http.Client{Transport: transport}, PollWait: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
