package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// A misspelled field of an elicitation is refused, naming the key and the
// field meant, instead of being ignored (a "timout" would leave the question
// waiting the default hour). Keys questiond does not know and that are not
// near one of its own pass: MCP adds params over time.
func TestNearMissKeysAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	schema := `{"type":"object","properties":{"ok":{"type":"boolean","title":"OK"}}}`
	for _, c := range []struct{ path, body, key, meant string }{
		{"/elicitations", `{"message":"m","requestedSchema":` + schema + `,"timout":"30s"}`, "timout", "timeout"},
		{"/elicitations", `{"message":"m","requestedSchema":` + schema + `,"sessionId":"ses_x"}`, "sessionId", "sessionID"},
		{"/elicitations", `{"message":"m","requestedSchema":` + schema + `,"directroy":"/a"}`, "directroy", "directory"},
		{"/elicit", `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m","requestedSchema":` + schema + `,"Timeout":"3s"}}`, "Timeout", "timeout"},
	} {
		res := h.do(http.MethodPost, c.path, json.RawMessage(c.body))
		body := string(res.Body)
		if res.Status == http.StatusOK && strings.Contains(body, `"jsonrpc"`) {
			if !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, c.key) || !strings.Contains(body, c.meant) {
				t.Errorf("%s %s: %s, want a JSON-RPC invalid-params error naming %s and %s", c.path, c.key, body, c.key, c.meant)
			}
			continue
		}
		wantStatusError(t, c.path+" with "+c.key, res, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(body, `unknown key \"`+c.key+`\": did you mean \"`+c.meant+`\"?`) {
			t.Errorf("%s with %s: %s", c.path, c.key, body)
		}
	}
	// Far from every field: accepted, as MCP's later params must be.
	res := h.do(http.MethodPost, "/elicitations", json.RawMessage(`{"message":"m","requestedSchema":`+schema+`,"_meta":{"x":1},"futureParam":true,"tools":[],"model":"x"}`))
	if res.Status != http.StatusCreated {
		t.Errorf("an unknown key far from questiond's fields: %d %s", res.Status, res.Body)
	}
}
