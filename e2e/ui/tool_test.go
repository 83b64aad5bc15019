package ui

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolCall is the outcome of an MCP question-tool call.
type toolCall struct {
	res *mcp.CallToolResult
	err error
}

// callTool calls ask_user_question as an agent on session's MCP connection,
// in the background.
func (d *daemon) callTool(session string, questions ...any) <-chan toolCall {
	d.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-ui-agent", Version: "1"}, nil)
	cs, err := client.Connect(d.t.Context(), &mcp.StreamableClientTransport{Endpoint: d.URL + "/mcp?session=" + session}, nil)
	if err != nil {
		d.t.Fatalf("MCP connect: %v", err)
	}
	d.t.Cleanup(func() { _ = cs.Close() })
	done := make(chan toolCall, 1)
	go func() {
		res, err := cs.CallTool(d.t.Context(), &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{"questions": questions}})
		done <- toolCall{res, err}
	}()
	return done
}

// toolAnswer waits for the call to return and reads its structured result.
func toolAnswer(t *testing.T, done <-chan toolCall) (action string, answers [][]string) {
	t.Helper()
	var call toolCall
	select {
	case call = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the tool call did not return")
	}
	if call.err != nil || call.res.IsError {
		t.Fatalf("ask_user_question: %v %+v", call.err, call.res)
	}
	raw, _ := json.Marshal(call.res.StructuredContent)
	var got struct {
		Action  string
		Answers [][]string
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return got.Action, got.Answers
}

// TestToolQuestionShowsOptionDescriptions: a question from the MCP tool shows
// each option's description in the page, as the TUI shows it.
func TestToolQuestionShowsOptionDescriptions(t *testing.T) {
	d := startDaemon(t)
	done := d.callTool("ses_tool",
		map[string]any{"question": "Which database should we use?", "header": "Database", "options": []any{
			map[string]any{"label": "Postgres", "description": "Relational, robust"},
			map[string]any{"label": "SQLite", "description": "Embedded, simple"},
		}},
		map[string]any{"question": "Which features?", "header": "Features", "multiple": true, "options": []any{
			map[string]any{"label": "Auth", "description": "Login and sessions"}, map[string]any{"label": "Billing"},
		}})
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(`article.question`))
	id := eval[string](b, `document.querySelector("article.question").dataset.id`)
	descriptions := eval[[]string](b, `[...document.querySelectorAll("#question-`+id+` .choice label")].map(l => l.innerText)`)
	want := []string{"Postgres\nRelational, robust", "SQLite\nEmbedded, simple", "No answer", "Auth\nLogin and sessions", "Billing"}
	if !reflect.DeepEqual(descriptions, want) {
		b.screenshot("tool-question")
		t.Errorf("options shown as %q, want with their descriptions %q", descriptions, want)
	}
	b.do(
		chromedp.Click(option(id, 0, "SQLite")),
		chromedp.Click(option(id, 1, "Auth")),
		chromedp.Click(card(id, "button.submit")),
		chromedp.WaitNotPresent(card(id)),
	)
	action, answers := toolAnswer(t, done)
	if want := [][]string{{"SQLite"}, {"Auth"}}; action != "accept" || !reflect.DeepEqual(answers, want) {
		t.Errorf("the tool returned %s %q, want accept %q", action, answers, want)
	}
}

// TestToolHearsDismissAsCancelDeclineAsDecline: the page's Dismiss (not now)
// reaches an MCP question tool as {"action":"cancel"}, its Decline (no) as
// {"action":"decline"}, as they reach an HTTP agent.
func TestToolHearsDismissAsCancelDeclineAsDecline(t *testing.T) {
	d := startDaemon(t)
	deploy := map[string]any{"question": "Deploy now?", "header": "Deploy", "options": []any{
		map[string]any{"label": "Yes"}, map[string]any{"label": "No"}}}
	b := openPage(t, d)
	for _, c := range []struct{ button, want string }{{"dismiss", "cancel"}, {"decline", "decline"}} {
		done := d.callTool("ses_tool_"+c.button, deploy)
		b.do(chromedp.WaitVisible(`article.question`))
		id := eval[string](b, `document.querySelector("article.question").dataset.id`)
		b.do(chromedp.Click(card(id, "button."+c.button)), chromedp.WaitNotPresent(card(id)))
		if action, answers := toolAnswer(t, done); action != c.want || answers != nil {
			t.Errorf("after the page's %s the tool returned %q %q, want %q", c.button, action, answers, c.want)
		}
	}
}
