package httpapi_test

// What an agent writes reaches operators as it reads: bidirectional
// overrides cannot make one answer look like another, and an operator who
// answers with the label as shown still picks the option meant.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi"
)

const rightToLeftOverride = "\u202E"

// spoofing shows "Deny approve" in a terminal that honours the override,
// while its value is "deny".
var spoofing = map[string]any{
	"message":   "Ship build 42?" + rightToLeftOverride + "kcab llor",
	"sessionID": "ses_bidi",
	"requestedSchema": json.RawMessage(`{"type":"object","properties":{
		"verdict":{"type":"string","title":"Ver\u202Edict","description":"Pick \u2067one\u2069",
			"oneOf":[{"const":"deny","title":"Deny \u202Eevorppa"},{"const":"approve","title":"Approve"}]}},
		"required":["verdict"]}`),
}

func hasBidiControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069' || r == '\u200E' || r == '\u200F' || r == '\u061C'
	})
}

func TestBidiOverridesDoNotReachOperators(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	c := h.create(spoofing)

	for _, path := range []string{"/question", "/session/ses_bidi", "/questiond/question/" + c.ID + "/form", "/session/ses_bidi/message"} {
		res := h.do(http.MethodGet, path, nil)
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.Status, res.Body)
		}
		var decoded any // decoded: JSON may escape the characters
		res.json(t, &decoded)
		if hasBidiControl(walkStrings(decoded)) {
			t.Errorf("GET %s shows a bidirectional control: %s", path, res.Body)
		}
	}
	var listed []struct {
		Questions []struct {
			Question string `json:"question"`
			Header   string `json:"header"`
			Options  []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	q := listed[0].Questions[0]
	if q.Header != "Ver\uFFFDdict" || !strings.HasPrefix(q.Question, "Ship build 42?\uFFFDkcab llor\n\nPick \uFFFDone\uFFFD") ||
		q.Options[0].Label != "Deny \uFFFDevorppa" {
		t.Fatalf("shown question %+v", q)
	}

	// The operator answers with the label exactly as shown.
	reply := h.do(http.MethodPost, "/question/"+c.ID+"/reply", map[string]any{"answers": [][]string{{q.Options[0].Label}}})
	if reply.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", reply.Status, reply.Body)
	}
	var got created
	h.do(http.MethodGet, "/elicitations/"+c.ID, nil).json(t, &got)
	if got.Result == nil || got.Result.Action != "accept" || got.Result.Content["verdict"] != "deny" {
		t.Fatalf("the agent got %+v, want verdict deny", got.Result)
	}
}

// walkStrings joins every string (keys too) of a decoded JSON value.
func walkStrings(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				b.WriteString(k)
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

func manyOptions(n int) json.RawMessage {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf(`"zone-%d"`, i)
	}
	return json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string","enum":[` + strings.Join(values, ",") + `]}}}`)
}

func TestTooManyOptionsIsA400NamingTheProperty(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	want := "requestedSchema.properties.zone: offers 5000 options; the limit is 1000"
	for _, path := range []string{"/elicitations", "/elicit"} {
		res := h.do(http.MethodPost, path, map[string]any{"message": "Where?", "requestedSchema": manyOptions(5000)})
		var body struct {
			Name string `json:"name"`
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		res.json(t, &body)
		if res.Status != http.StatusBadRequest || body.Name != "BadRequest" || body.Data.Message != want {
			t.Errorf("POST %s: %d %s, want 400 saying %q", path, res.Status, res.Body, want)
		}
	}
	// JSON-RPC callers of POST /elicit get invalid params with the same words.
	res := h.do(http.MethodPost, "/elicit", map[string]any{"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
		"params": map[string]any{"message": "Where?", "requestedSchema": manyOptions(5000)}})
	if !strings.Contains(string(res.Body), `"code":-32602`) || !strings.Contains(string(res.Body), want) {
		t.Errorf("JSON-RPC POST /elicit: %d %s", res.Status, res.Body)
	}
	if n := len(h.do(http.MethodGet, "/question", nil).Body); n != len("[]") {
		t.Errorf("a refused elicitation was listed")
	}
	if c := h.create(map[string]any{"message": "Where?", "requestedSchema": manyOptions(elicit.DefaultMaxOptions)}); c.ID == "" {
		t.Error("an enum at the limit was refused")
	}
}

func TestMaxOptionsBoundsTheQuestionTool(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{Elicit: elicit.Options{MaxOptions: 3}})
	cs := mcpConnect(t, h, "/mcp?session=ses_tool", nil, nil)
	options := []any{}
	for i := range 4 {
		options = append(options, map[string]any{"label": fmt.Sprint("Option ", i)})
	}
	call := callNow(t, cs, "ask_user_question", map[string]any{"questions": []any{
		map[string]any{"question": "Which?", "options": options}}})
	if call.err != nil || call.res == nil || !call.res.IsError {
		t.Fatalf("got %+v, %v; want a tool error", call.res, call.err)
	}
	text := call.res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "questions[0].options: at most 3 options can be offered, got 4") {
		t.Errorf("tool error %q does not name the field and the limit", text)
	}
	res := h.do(http.MethodPost, "/elicitations", map[string]any{"message": "Where?", "requestedSchema": manyOptions(4)})
	if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "offers 4 options; the limit is 3") {
		t.Errorf("POST /elicitations with --max-options 3: %d %s", res.Status, res.Body)
	}
}

// Two options an operator cannot tell apart are refused on every asking
// route, naming the option; zero-width characters in what is shown become a
// visible U+FFFD, while joiners in emoji stay.
func TestLookalikesDoNotReachOperators(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	for _, enum := range []string{`["ab","a\u200bb"]`, `["ab","a\u200db"]`, `["fi","\ufb01"]`} {
		res := h.do(http.MethodPost, "/elicitations", `{"message":"m","requestedSchema":{"type":"object","properties":{"p":{"type":"string","enum":`+enum+`}}}}`)
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "requestedSchema.properties.p.enum[1]") || !strings.Contains(string(res.Body), "operators cannot tell it from") {
			t.Errorf("enum %s: %d %s, want 400 naming enum[1]", enum, res.Status, res.Body)
		}
	}
	h.create(map[string]any{
		"message":         "Pay \u200b$100\u2060? \U0001F468\u200D\U0001F469",
		"requestedSchema": json.RawMessage(`{"type":"object","properties":{"ok":{"type":"string","title":"O\u200bK","enum":["yes","no"]}}}`),
	})
	var listed []struct {
		Questions []elicit.QuestionInfo `json:"questions"`
	}
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	q := listed[0].Questions[0]
	if strings.ContainsAny(q.Question+q.Header, "\u200b\u2060") || !strings.Contains(q.Question, "Pay \uFFFD$100\uFFFD?") || q.Header != "O\uFFFDK" {
		t.Errorf("shown %q / %q: zero-width characters must show as U+FFFD", q.Header, q.Question)
	}
	if !strings.Contains(q.Question, "\U0001F468\u200D\U0001F469") {
		t.Errorf("shown %q: the emoji's joiner must stay", q.Question)
	}
}
