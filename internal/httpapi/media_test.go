package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// `curl -d` without a Content-Type header sends a form type. questiond's own
// routes refuse it (a form post could come from any page) with JSON that says
// which header to send; OpenCode's routes keep OpenCode's plain-text 415.
func TestFormPostsAreRefusedWithTheHeaderToSend(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	form := "application/x-www-form-urlencoded"
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/elicitations"}, {http.MethodPost, "/elicit"}, {http.MethodPut, "/sessions/ses_form"},
	} {
		res := h.do(c.method, c.path, `{"message":"m"}`, "Content-Type", form)
		var named struct {
			Name string
			Data struct{ Message, Kind string }
		}
		if res.Status != http.StatusUnsupportedMediaType || res.Header.Get("Content-Type") != "application/json" ||
			json.Unmarshal(res.Body, &named) != nil || named.Name != "UnsupportedMediaType" || named.Data.Kind != "Headers" ||
			!strings.Contains(named.Data.Message, "-H 'Content-Type: application/json'") || !strings.Contains(named.Data.Message, form) {
			t.Errorf("%s %s as a form: %d %s %s", c.method, c.path, res.Status, res.Header.Get("Content-Type"), res.Body)
		}
	}
	res := h.do(http.MethodPost, "/question/que_00000000000000000000000000/reply", `{"answers":[]}`, "Content-Type", form)
	if res.Status != http.StatusUnsupportedMediaType || res.Header.Get("Content-Type") != "text/plain" || string(res.Body) != "Unsupported content-type: "+form {
		t.Errorf("OpenCode's reply route as a form: %d %s %q, want OpenCode's plain 415", res.Status, res.Header.Get("Content-Type"), res.Body)
	}
}

// A reply may name an option by its label, by its value, or by its label in
// another letter case; each gives the agent the option's value.
func TestReplyNamesOptionsByLabelOrValue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	form := map[string]any{
		"message": "Pick",
		"requestedSchema": json.RawMessage(`{"type":"object","properties":{
			"model":{"type":"string","title":"Model","oneOf":[{"const":"SY215C","title":"SY215C excavator"},{"const":"SY365H","title":"SY365H excavator"}]}},
			"required":["model"]}`),
	}
	for _, answer := range []string{"SY365H excavator", "SY365H", "sy365h EXCAVATOR"} {
		id := h.create(form).ID
		if res := h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{answer}}}); res.Status != http.StatusOK {
			t.Fatalf("reply %q: %d %s", answer, res.Status, res.Body)
		}
		var got created
		h.do(http.MethodGet, "/elicitations/"+id, nil).json(t, &got)
		if got.Result == nil || got.Result.Action != "accept" || got.Result.Content["model"] != "SY365H" {
			t.Errorf("reply %q: result %+v, want model SY365H", answer, got.Result)
		}
	}
}

// An empty body on questiond's own routes says what to send; OpenCode's
// routes keep OpenCode's words.
func TestEmptyBodySaysWhatToSend(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	for _, c := range []struct{ method, path, want string }{
		{http.MethodPost, "/elicitations", `"requestedSchema"`},
		{http.MethodPost, "/elicit", `"requestedSchema"`},
		{http.MethodPut, "/sessions/ses_empty", `"questionCapability"`},
	} {
		res := h.do(c.method, c.path, "", "Content-Type", "application/json")
		wantStatusError(t, c.method+" "+c.path+" empty", res, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(string(res.Body), "the request body is empty") || !strings.Contains(string(res.Body), strings.ReplaceAll(c.want, `"`, `\"`)) {
			t.Errorf("%s %s empty: %s", c.method, c.path, res.Body)
		}
	}
	res := h.do(http.MethodPost, "/question/que_00000000000000000000000000/reply", "", "Content-Type", "application/json")
	if !strings.Contains(string(res.Body), "Expected object, got undefined") {
		t.Errorf("OpenCode's reply route, empty: %s", res.Body)
	}
}

// Error messages keep <, > and & as they are, as OpenCode sends them: a
// pattern's explanation with \u003c in it is unreadable.
func TestErrorsAreNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	res := h.do(http.MethodPost, "/elicitations", `{"message":"m","requestedSchema":{"type":"object","properties":{"p":{"type":"string","pattern":"(?<=a)b"}}}}`)
	wantStatusError(t, "a pattern with a lookbehind", res, http.StatusBadRequest, "BadRequest")
	if strings.Contains(string(res.Body), `\u003c`) || !strings.Contains(string(res.Body), "(?<=a)b") {
		t.Errorf("error body %s: want < as it is", res.Body)
	}
}
