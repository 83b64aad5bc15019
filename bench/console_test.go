package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// BenchmarkRoundTripConsole measures what an attached OpenCode TUI costs:
// the round trips of BenchmarkRoundTrip on questiond (memory store) alone,
// and with one TUI event stream attached (User-Agent opencode/…), which
// makes questiond keep the console's view: one question per session shown,
// the session's title, status and history, a toast per question. The
// questions go to one session (the agents' inbox), the console's worst
// case. The tui line carries the ratio tui/plain of roundtrips/s.
func BenchmarkRoundTripConsole(b *testing.B) {
	const agents = 64
	rates := map[string]float64{}
	for _, withConsole := range []bool{false, true} {
		name := "plain"
		if withConsole {
			name = "tui"
		}
		var fx *roundTripFixture
		detach := func() {}
		b.Run(fmt.Sprintf("%s/agents=%d", name, agents), func(b *testing.B) {
			if fx == nil {
				fx = newRoundTripFixture(b, startQuestiond, agents)
				if withConsole {
					// The stream outlives this run: b.Run calls the function
					// again with a larger b.N on the same fixture.
					detach = attachConsole(b, fx.srv.url)
				}
			}
			rates[name] = timeRoundTrips(b, fx.roundTrips(agents))
			if withConsole && rates["plain"] > 0 {
				b.ReportMetric(rates["tui"]/rates["plain"], "tui/plain")
			}
		})
		detach()
		if fx != nil {
			fx.close()
		}
	}
}

// attachConsole opens the OpenCode TUI's event stream and reads it until
// the returned detach is called.
func attachConsole(b *testing.B, base string) (detach func()) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/global/event", nil)
	req.Header.Set("User-Agent", "opencode/1.18.33")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		b.Fatalf("GET /global/event as the TUI: status %d", res.StatusCode)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, res.Body)
	}()
	return func() {
		cancel()
		res.Body.Close()
		<-done
	}
}
