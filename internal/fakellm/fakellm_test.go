package fakellm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/fakellm"
	"github.com/questiond/questiond/internal/testkit"
)

// A test scripts the turns: the user's prompt gets a call of the scripted
// tool with the scripted arguments (streamed as OpenAI-compatible chunks,
// or whole), the turn after the tool's result gets the scripted text, a
// request without tools (a title) gets TitleText; every request is kept.
func TestScriptedTurns(t *testing.T) {
	llm, err := fakellm.Start(fakellm.CallThenAnswer("deploy_release", map[string]any{"version": "v2.3"}, "Deployed."))
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	tools := `"tools":[{"type":"function","function":{"name":"bash"}},{"type":"function","function":{"name":"deploy_release"}}]`
	for _, c := range []struct{ name, body, want, not string }{
		{"prompt, streamed", `{"stream":true,` + tools + `,"messages":[{"role":"user","content":"go"}]}`,
			`"name":"deploy_release"`, "Deployed."},
		{"prompt, whole", `{"stream":false,` + tools + `,"messages":[{"role":"user","content":"go"}]}`,
			`"arguments":"{\"version\":\"v2.3\"}"`, "Deployed."},
		{"after the result", `{"stream":true,` + tools + `,"messages":[{"role":"user"},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
			`"content":"Deployed."`, "tool_calls"},
		{"tool not offered", `{"stream":true,"tools":[{"function":{"name":"bash"}}],"messages":[{"role":"user"}]}`,
			"Deployed.", "tool_calls"},
		{"title", `{"stream":false,"messages":[{"role":"user"}]}`, fakellm.TitleText, "tool_calls"},
	} {
		status, body := testkit.SendJSON(t, http.MethodPost, llm.URL+"/chat/completions", c.body)
		if status != http.StatusOK || !strings.Contains(body, c.want) || strings.Contains(body, c.not) {
			t.Errorf("%s: %d\n%s", c.name, status, body)
		}
		if strings.Contains(c.body, `"stream":true`) && !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Errorf("%s: the stream does not end:\n%s", c.name, body)
		}
	}
	res, err := http.Post(llm.URL+"/chat/completions", "application/json", strings.NewReader(`{"stream":true,`+tools+`,"messages":[{"role":"user"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	args := ""
	for data := range testkit.Data(res.Body, 0) {
		var chunk struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if data != "[DONE]" {
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			for _, ch := range chunk.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					args += tc.Function.Arguments
				}
			}
		}
	}
	if args != `{"version":"v2.3"}` {
		t.Errorf("the streamed call's arguments add up to %q", args)
	}
	reqs := llm.Requests()
	if len(reqs) != 6 || reqs[2].LastRole() != "tool" || reqs[2].Messages[1].ToolCallID != "c1" || !reqs[0].Offers("bash") || reqs[4].Offers("bash") {
		t.Errorf("kept requests: %+v", reqs)
	}
}
