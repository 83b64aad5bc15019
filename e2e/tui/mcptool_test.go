package tui

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

func TestMCPToolQuestionAnsweredInTheTUI(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	d := startDaemon(t, daemonOptions{})
	const session = "ses_e2emcptool"
	cs := mcptest.Connect(t, t.Context(), d.URL+"/mcp?session="+session)

	type toolCall struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan toolCall, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
			"questions": []any{
				map[string]any{"question": "Which database should we use?", "header": "Database", "options": []any{
					map[string]any{"label": "Postgres", "description": "Relational, robust"},
					map[string]any{"label": "SQLite", "description": "Embedded, simple"},
				}},
				map[string]any{"question": "Which features?", "header": "Features", "multiple": true, "options": []any{
					map[string]any{"label": "Auth"}, map[string]any{"label": "Billing"}, map[string]any{"label": "Search"},
				}},
			},
		}})
		done <- toolCall{res, err}
	}()
	d.waitPending(session, 1)

	u := attach(t, "tui", d.URL, "--session", session)
	u.waitFor("panel", "Database", "Features", "Relational, robust", panelHint)
	u.keys("1")
	u.waitFor("features", "Which features?", "Billing")
	u.keys("1", "2")
	u.keys("Tab")
	u.waitFor("review", "Database: Postgres", "Features: Auth, Billing")
	u.keys("Enter")

	var call toolCall
	select {
	case call = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool call did not return within 20s of the answer")
	}
	if call.err != nil || call.res.IsError {
		t.Fatalf("ask_user_question: err %v, result %+v", call.err, call.res)
	}
	raw, err := json.Marshal(call.res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Action  string
		Answers [][]string
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	if want := [][]string{{"Postgres"}, {"Auth", "Billing"}}; got.Action != "accept" || !reflect.DeepEqual(got.Answers, want) {
		t.Fatalf("the tool returned %s, want accept with %v", raw, want)
	}
	text := call.res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, `"Which features?"="Auth, Billing"`) {
		t.Fatalf("the tool's text does not carry the answers: %q", text)
	}
	u.waitGone("answered", panelHint)
}
