package daemon_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// Issue 22: what the connection guard refuses is counted on /metrics, by
// reason, each scripted refusal moving its own series by exactly one.
func TestMetricsCountConnectionRefusals(t *testing.T) {
	cfg := config(t)
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = mln
	cfg.API.Auth = httpapi.Auth{OperatorPassword: metricsPassword, AgentTokens: map[string]string{metricsAgent: metricsToken}}
	cfg.Conns = connguard.Options{BodyReadTimeout: 300 * time.Millisecond, MaxConnsPerAgent: 1}
	d := running(t, cfg)
	addr := d.Addr().String()
	metricsURL := "http://" + mln.Addr().String() + "/metrics"
	series := func(reason string) string { return `questiond_connection_refusals_total{reason="` + reason + `"}` }

	before, _ := scrape(t, metricsURL)
	for _, reason := range connguard.Reasons {
		if _, ok := before[series(reason)]; !ok {
			t.Errorf("no %s before any refusal: every reason must show from the start", series(reason))
		}
	}

	// A body that never arrives: 408.
	slow := dialRaw(t, addr)
	fmt.Fprintf(slow, "POST /elicitations HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"m", addr, metricsToken)
	if status := readStatus(t, slow); status != http.StatusRequestTimeout {
		t.Fatalf("a body that never arrives: %d, want 408", status)
	}
	// The guard forgets a connection before its socket closes: once this
	// one is closed it no longer holds the agent's only place.
	if _, err := io.Copy(io.Discard, slow); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the connection of the body that never arrived: %v, want closed", err)
	}
	mid, _ := scrape(t, metricsURL)
	movedBy(t, before, mid, series(connguard.ReasonBodyReadTimeout), 1)

	// The agent's one connection is being answered (POST /elicit waits for
	// the human); its second is refused with 503.
	waiting := dialRaw(t, addr)
	ask := fmt.Sprintf(`{"message":%q,"sessionID":%q,"requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`, metricsMessage, metricsSession)
	fmt.Fprintf(waiting, "POST /elicit HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, metricsToken, len(ask), ask)
	eventually(t, "the question pending", func() bool {
		n, err := d.Store().Count(t.Context(), pending.Filter{})
		return err == nil && n == 1
	})
	second := dialRaw(t, addr)
	fmt.Fprintf(second, "GET /elicitations/que_none HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, metricsToken)
	if status := readStatus(t, second); status != http.StatusServiceUnavailable {
		t.Fatalf("the agent's second connection: %d, want 503", status)
	}
	after, _ := scrape(t, metricsURL)
	movedBy(t, mid, after, series(connguard.ReasonAgentCap), 1)
	for _, reason := range connguard.Reasons {
		if reason != connguard.ReasonAgentCap && reason != connguard.ReasonBodyReadTimeout {
			movedBy(t, before, after, series(reason), 0)
		}
	}
	movedBy(t, mid, after, series(connguard.ReasonBodyReadTimeout), 0)
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return c
}

// readStatus reads the status code of the first response on c.
func readStatus(t *testing.T, c net.Conn) int {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

func movedBy(t *testing.T, from, to map[string]float64, name string, by float64) {
	t.Helper()
	if got := to[name] - from[name]; got != by {
		t.Errorf("%s moved by %v, want %v", name, got, by)
	}
}
