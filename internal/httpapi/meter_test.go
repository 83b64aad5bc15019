package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"
)

// meterLog is a Meter that keeps what it hears, as lines.
type meterLog struct {
	mu    sync.Mutex
	lines []string
}

func (m *meterLog) add(line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines = append(m.lines, line)
}

func (m *meterLog) Request(method, route string, status int) {
	m.add(fmt.Sprintf("%s %s %d", method, route, status))
}
func (m *meterLog) ToolCall(tool, result string) { m.add("tool " + tool + " " + result) }
func (m *meterLog) Refused(limit string)         { m.add("refused " + limit) }

func (m *meterLog) has(line string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.lines, line)
}

func (m *meterLog) all() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.lines, "\n")
}

// Requests are metered by route pattern and the status the client got —
// streams and long answers keep working through the meter (flushes,
// connections taken over) — and a path never becomes a label.
func TestRequestsAreMeteredByRoutePattern(t *testing.T) {
	t.Parallel()
	meter := &meterLog{}
	h := newHarness(t, httpapi.Options{Meter: meter, KeepAlive: time.Millisecond,
		Limits: httpapi.Limits{MaxStreams: 2}})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	global := h.openStream("/global/event")
	global.expect(t, "server.connected")
	if r := h.do(http.MethodGet, "/event", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a third stream: %d", r.Status)
	}

	// POST /elicit writes keep-alive whitespace, flushed every millisecond,
	// until the answer.
	answered := make(chan response, 1)
	go func() { answered <- h.do(http.MethodPost, "/elicit", seedForm()) }()
	var asked struct{ ID string }
	_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &asked)
	id := asked.ID
	if r := h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"SY215C"}, {"Black smoke"}}}); r.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", r.Status, r.Body)
	}
	if r := <-answered; r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"accept"`) {
		t.Fatalf("POST /elicit: %d %s", r.Status, r.Body)
	}

	h.do(http.MethodPost, "/question/que_unknownQuestion/reply", map[string]any{"answers": [][]string{{"x"}}})
	h.do(http.MethodGet, "/no/such/path/que_secret", nil)
	h.do("PATCH", "/question", nil)
	misdirected, _ := http.NewRequest(http.MethodGet, h.URL+"/question", nil)
	misdirected.Host = "rebinding.example"
	if r, err := http.DefaultClient.Do(misdirected); err != nil || r.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a Host this server is not: %v %v", r, err)
	} else {
		r.Body.Close()
	}

	want := []string{
		"GET /event 200", "GET /global/event 200", "GET /event 503", "refused streams",
		"POST /elicit 200", "POST /question/{requestID}/reply 200", "POST /question/{requestID}/reply 404",
		"GET unmatched 404", "other unmatched 405", "GET /question 421",
	}
	for _, line := range want {
		if !meter.has(line) {
			t.Errorf("not metered: %q; heard:\n%s", line, meter.all())
		}
	}
	for _, secret := range []string{id, "que_", "no/such", "rebinding"} {
		if strings.Contains(meter.all(), secret) {
			t.Errorf("a label carries %q:\n%s", secret, meter.all())
		}
	}
}
