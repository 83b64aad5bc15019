package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"
)

// refusedAtOnce sends a request that questiond must answer at once: with a
// short timeout, since a POST /elicit that is not refused waits for an
// answer nobody gives.
func refusedAtOnce(t *testing.T, h *harness, method, path, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v (not refused at once)", method, path, body, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// A JSON-RPC request to /elicit whose id is neither a string nor a number
// is refused at once like one without an id (-32600, id null), never
// asked: questiond could not echo such an id back.
func TestElicitRefusesIDsThatAreNotStringsOrNumbers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	const schema = `{"type":"object","properties":{"a":{"type":"string"}}}`
	for _, id := range []string{`{"x":1}`, `[1]`, `true`, `null`} {
		t.Run(id, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":` + id + `,"method":"elicitation/create","params":{"message":"m","requestedSchema":` + schema + `}}`
			res := refusedAtOnce(t, h, http.MethodPost, "/elicit", body)
			var answer struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			res.json(t, &answer)
			if answer.Error == nil || answer.Error.Code != -32600 || string(answer.ID) != "null" {
				t.Fatalf("id %s: %d %s, want a -32600 error with id null", id, res.Status, res.Body)
			}
			if pending := h.do(http.MethodGet, "/question", nil); strings.TrimSpace(string(pending.Body)) != "[]" {
				t.Fatalf("id %s: a question was asked: %s", id, pending.Body)
			}
		})
	}
}

// Agents' bodies may not repeat a key at the top level (nor in a JSON-RPC
// request's params), as the schemas inside them may not: which of two
// messages the operator would see must never be a guess. OpenCode's own
// reply route keeps OpenCode's rule (the last wins).
func TestAgentBodiesRefuseRepeatedKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	const schema = `"requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}`
	for _, c := range []struct{ method, path, body, at string }{
		{http.MethodPost, "/elicitations", `{"message":"m","message":"n",` + schema + `}`, `["message"]`},
		{http.MethodPost, "/elicitations", `{"message":"m",` + schema + `,` + schema + `}`, `["requestedSchema"]`},
		{http.MethodPost, "/elicit", `{"message":"m","message":"n",` + schema + `}`, `["message"]`},
		{http.MethodPost, "/elicit", `{"method":"elicitation/create","params":{"message":"m","message":"n",` + schema + `}}`, `["params"]["message"]`},
		{http.MethodPost, "/elicit", `{"method":"elicitation/create","method":"elicitation/create","params":{"message":"m",` + schema + `}}`, `["method"]`},
		{http.MethodPut, "/sessions/ses_dup", `{"questionCapability":"user","questionCapability":"none"}`, `["questionCapability"]`},
	} {
		res := refusedAtOnce(t, h, c.method, c.path, c.body)
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "Duplicate key") || !strings.Contains(string(res.Body), strings.ReplaceAll(c.at, `"`, `\"`)) {
			t.Errorf("%s %s %s: %d %s, want 400 naming %s", c.method, c.path, c.body, res.Status, res.Body, c.at)
		}
	}
	if pending := h.do(http.MethodGet, "/question", nil); strings.TrimSpace(string(pending.Body)) != "[]" {
		t.Fatalf("a refused body asked a question: %s", pending.Body)
	}

	q := h.create(map[string]any{"message": "m", "requestedSchema": json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
	res := h.do(http.MethodPost, "/question/"+q.ID+"/reply", `{"answers":[["first"]],"answers":[["last"]]}`)
	if res.Status != http.StatusOK {
		t.Fatalf("OpenCode's reply with a repeated key: %d %s, want 200 as OpenCode answers", res.Status, res.Body)
	}
	got := h.do(http.MethodGet, "/elicitations/"+q.ID, nil)
	if !strings.Contains(string(got.Body), `"a":"last"`) {
		t.Fatalf("reply with repeated answers: %s, want the last to win as in OpenCode", got.Body)
	}
}
