package httpapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// TestSeedFormEndToEnd is the whole product in one test: an agent asks the
// seed RFC's two-question form, an operator's stream sees question.asked, the
// operator replies with labels, and the agent gets typed content keyed by the
// schema's own property names.
func TestSeedFormEndToEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")

	agent := make(chan response, 1)
	go func() {
		res, err := h.request(http.MethodPost, "/elicit", seedForm())
		if err != nil {
			t.Error(err)
		}
		agent <- res
	}()

	asked := events.expect(t, "question.asked")
	var q struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
		Questions []struct {
			Question string `json:"question"`
			Header   string `json:"header"`
			Options  []struct {
				Label string `json:"label"`
			} `json:"options"`
			Multiple *bool `json:"multiple"`
			Custom   *bool `json:"custom"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(asked.Properties, &q); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(q.ID, "que_") || !strings.HasPrefix(q.SessionID, "ses_") || len(q.Questions) != 2 {
		t.Fatalf("unexpected question.asked: %s", asked.Raw)
	}
	if q.Questions[0].Header != "Model" || q.Questions[1].Header != "Symptoms" {
		t.Fatalf("headers out of schema order: %s", asked.Raw)
	}
	if !strings.Contains(q.Questions[0].Question, "Diagnose the machine") {
		t.Errorf("the elicitation message is not shown to the operator: %s", asked.Raw)
	}
	if q.Questions[1].Multiple == nil || !*q.Questions[1].Multiple {
		t.Errorf("multi-select not marked multiple: %s", asked.Raw)
	}

	list := h.do(http.MethodGet, "/question", nil)
	var listed []json.RawMessage
	list.json(t, &listed)
	if len(listed) != 1 || string(listed[0]) != string(asked.Properties) {
		t.Fatalf("GET /question = %s, want exactly the asked question %s", list.Body, asked.Properties)
	}

	reply := h.do(http.MethodPost, "/question/"+q.ID+"/reply", `{"answers":[["SY215C"],["Black smoke"]]}`)
	if reply.Status != http.StatusOK || string(reply.Body) != "true" {
		t.Fatalf("reply: %d %s", reply.Status, reply.Body)
	}
	replied := events.expect(t, "question.replied")
	want := `{"sessionID":"` + q.SessionID + `","requestID":"` + q.ID + `","answers":[["SY215C"],["Black smoke"]]}`
	if string(replied.Properties) != want {
		t.Errorf("question.replied = %s, want %s", replied.Properties, want)
	}

	res := <-agent
	if res.Status != http.StatusOK {
		t.Fatalf("POST /elicit: %d %s", res.Status, res.Body)
	}
	var result struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	res.json(t, &result)
	wantContent := map[string]any{"model": "SY215C", "symptoms": []any{"Black smoke"}}
	if result.Action != "accept" || !reflect.DeepEqual(result.Content, wantContent) {
		t.Fatalf("agent got %s, want accept with %v", res.Body, wantContent)
	}
	if got := res.Header.Get("X-Questiond-Request-Id"); got != q.ID {
		t.Errorf("X-Questiond-Request-Id = %q, want %q", got, q.ID)
	}
}
