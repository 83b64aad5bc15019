package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// History shows what the agent received (issue 24): a question that ended
// without answers says why in a closing text part (the TUI shows no error of
// a question tool, only its title), and an answer left blank that the
// schema's default filled in shows that default.
func TestConsoleHistoryShowsWhatTheAgentReceived(t *testing.T) {
	c := newConsole(t, tuning{})
	defaulted := c.ask(alphaToken, map[string]any{"sessionID": "ses_hist", "message": "Ship it?", "requestedSchema": json.RawMessage(`{
		"type": "object",
		"properties": {
			"target": {"type": "string", "title": "Target", "oneOf": [{"const": "stg", "title": "Staging"}, {"const": "prd", "title": "Production"}], "default": "prd"},
			"replicas": {"type": "integer", "title": "Replicas", "default": 2},
			"note": {"type": "string", "title": "Note"}
		}
	}`)})
	dismissed := c.ask(alphaToken, map[string]any{"sessionID": "ses_hist"})
	if res := c.operator(http.MethodPost, "/question/"+defaulted+"/reply", map[string]any{"answers": [][]string{{}, {"3"}, {}}}); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	if res := c.operator(http.MethodPost, "/question/"+dismissed+"/reject", nil); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	msgs := c.messages("ses_hist", "")
	if len(msgs) != 2 {
		t.Fatalf("history holds %d messages, want 2", len(msgs))
	}
	answered := msgs[0].Parts[len(msgs[0].Parts)-1]
	if answered.Type != "tool" || !slices.EqualFunc(answered.State.Metadata.Answers, [][]string{{"Production (default)"}, {"3"}, {}}, slices.Equal) ||
		!strings.Contains(answered.State.Output, `="Production (default)"`) {
		t.Errorf("the answered question's history: %+v; want the default the agent got, and no answer for the note", answered.State)
	}
	parts := msgs[1].Parts
	if last := parts[len(parts)-1]; last.Type != "text" || last.Text != "*The user dismissed this question.*" ||
		parts[len(parts)-2].State.Error != "The user dismissed this question" {
		t.Errorf("the dismissed question's history ends with %+v; want the tool's error, then a text saying it was dismissed", last)
	}
}

// Titles have no styles: the agent's inline markdown shows without its
// markers, as the /ui page shows it unstyled.
func TestConsoleTitleDropsInlineMarkdown(t *testing.T) {
	c := newConsole(t, tuning{})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_md", "message": "Release **v2.3** of `shop` *now*? 2 * 3 stays"})
	var s consoleSessionView
	c.get("/session/ses_md", &s)
	if !strings.HasSuffix(s.Title, ": Release v2.3 of shop now? 2 * 3 stays") {
		t.Errorf("title %q, want the message without markdown markers", s.Title)
	}
}

// An asker's title names its session for operators, on one line and
// without markdown markers; one beyond 200 characters is refused naming
// the field.
func TestACreateRequestsTitleNamesItsSession(t *testing.T) {
	c := newConsole(t, tuning{})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_titled", "title": "**deploy** via\nopencode"})
	var s consoleSessionView
	c.get("/session/ses_titled", &s)
	if !strings.HasSuffix(s.Title, "deploy via opencode") || strings.Contains(s.Title, "alpha") {
		t.Errorf("title %q, want the asker's own, on one line, without markers", s.Title)
	}
	form := seedForm()
	form["title"] = strings.Repeat("x", 201)
	res := c.h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
	if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), `[\"title\"]`) {
		t.Errorf("a 201-character title: %d %s; want 400 naming title", res.Status, res.Body)
	}
}

// A create request may name the bridged MCP tool call that asks: agents
// read it back; an empty or oversized name is refused naming the field.
func TestACreateRequestsMCPToolIsKept(t *testing.T) {
	c := newConsole(t, tuning{})
	form := seedForm()
	form["mcpTool"] = map[string]string{"server": "github", "name": "create_issue"}
	res := c.h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
	var e struct {
		ID      string            `json:"id"`
		MCPTool map[string]string `json:"mcpTool"`
	}
	if res.Status != http.StatusCreated || json.Unmarshal(res.Body, &e) != nil {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	got := c.h.do(http.MethodGet, "/elicitations/"+e.ID, nil, "Authorization", bearerAuth(alphaToken))
	if err := json.Unmarshal(got.Body, &e); err != nil || e.MCPTool["server"] != "github" || e.MCPTool["name"] != "create_issue" {
		t.Fatalf("GET /elicitations/%s: %s", e.ID, got.Body)
	}
	for field, bad := range map[string]map[string]string{
		"name":   {"server": "github", "name": ""},
		"server": {"server": strings.Repeat("s", 129), "name": "x"},
	} {
		form["mcpTool"] = bad
		res := c.h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), `[\"mcpTool\"][\"`+field+`\"]`) {
			t.Errorf("mcpTool %v: %d %s; want 400 naming %s", bad, res.Status, res.Body, field)
		}
	}
}
