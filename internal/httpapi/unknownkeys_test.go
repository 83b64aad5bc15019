package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/questiond/questiond/internal/httpapi"
)

const unknownKeyLogged = "unknown request key ignored (logged once per name)"

// A key of an elicitation that questiond does not know, and that is no near
// miss of its own fields, is let through and named in the log at info, once
// per name, with the route and the agent: never its value.
func TestUnknownElicitationKeysAreLoggedOncePerName(t *testing.T) {
	t.Parallel()
	h, logs := newLoggedHarness(t, httpapi.Options{Auth: authAgentsOnly()}, nil)
	schema := `{"type":"object","properties":{"ok":{"type":"boolean","title":"OK"}}}`
	body := func(extra string) string {
		return `{"message":"m","requestedSchema":` + schema + `,"timeout":"20ms","_meta":{"a":1}` + extra + `}`
	}
	for _, c := range []struct{ path, body string }{
		{"/elicitations", body(`,"futureParam":"the-value-7781"`)},
		{"/elicitations", body(`,"futureParam":2,"another":true`)},
		{"/elicit", body(`,"futureParam":3`)},
		{"/elicit", `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":` + body(`,"another":4`) + `}`},
	} {
		res := send(t, h, http.MethodPost, c.path, c.body, withAuth(bearerAuth(alphaToken)))
		if res.Status >= 300 {
			t.Fatalf("%s %s: %d %s", c.path, c.body, res.Status, res.Body)
		}
	}
	entries := logs.FilterMessage(unknownKeyLogged).All()
	want := []map[string]any{
		{"key": "futureParam", "route": "POST /elicitations", "agent": "alpha"},
		{"key": "another", "route": "POST /elicitations", "agent": "alpha"},
	}
	if len(entries) != len(want) {
		t.Fatalf("%d entries %+v, want %d", len(entries), entries, len(want))
	}
	for i, e := range entries {
		if e.Level != zapcore.InfoLevel || fmt.Sprint(e.ContextMap()) != fmt.Sprint(want[i]) {
			t.Errorf("entry %d: %s %v, want info %v", i, e.Level, e.ContextMap(), want[i])
		}
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), "the-value-7781") {
			t.Errorf("a key's value was logged: %s %v", e.Message, e.ContextMap())
		}
	}
}

// The names remembered are capped: a client sending a fresh key with every
// request gets a hundred lines, one saying no more follow, and then none.
func TestUnknownKeyLogIsBounded(t *testing.T) {
	t.Parallel()
	h, logs := newLoggedHarness(t, httpapi.Options{}, nil)
	schema := `{"type":"object","properties":{"ok":{"type":"boolean","title":"OK"}}}`
	fields := map[string]any{"message": "m", "requestedSchema": json.RawMessage(schema),
		strings.Repeat("k", 5000): 1} // logged cut short
	for i := range 120 {
		fields[fmt.Sprintf("x%03d", i)] = i
	}
	for round := range 2 {
		if res := h.do(http.MethodPost, "/elicitations", fields); res.Status != http.StatusCreated {
			t.Fatalf("round %d: %d %s", round, res.Status, res.Body)
		}
		fields[fmt.Sprintf("fresh%d", round)] = true
	}
	entries := logs.FilterMessage(unknownKeyLogged).All()
	if len(entries) != 100 {
		t.Errorf("%d names logged, want the cap, 100", len(entries))
	}
	for _, e := range entries {
		if key := e.ContextMap()["key"].(string); len(key) > 70 {
			t.Errorf("a key of %d bytes was logged whole", len(key))
		}
	}
	if n := logs.FilterMessage("unknown request keys: no further names are logged").Len(); n != 1 {
		t.Errorf("%d lines say the cap was reached, want 1", n)
	}
}

// PUT /sessions logs the capability set, and a parent only when there is one:
// no empty fields.
func TestSessionPutLogsNoEmptyParent(t *testing.T) {
	t.Parallel()
	h, logs := newLoggedHarness(t, httpapi.Options{}, nil)
	for _, body := range []string{`{"questionCapability":"user"}`, `{"questionCapability":"parent","parentSessionID":"ses_lead"}`} {
		if res := h.do(http.MethodPut, "/sessions/ses_worker", json.RawMessage(body)); res.Status >= 300 {
			t.Fatalf("PUT %s: %d %s", body, res.Status, res.Body)
		}
	}
	entries := logs.FilterMessage("session question capability set").All()
	want := []string{"map[capability:user session:ses_worker]", "map[capability:parent parent:ses_lead session:ses_worker]"}
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(entries), entries)
	}
	for i, e := range entries {
		if got := fmt.Sprint(e.ContextMap()); got != want[i] {
			t.Errorf("entry %d: %s, want %s", i, got, want[i])
		}
	}
}
