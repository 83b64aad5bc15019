package tui

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// twoQuestionForm is an agent's form: one pick-one question whose options
// carry values other than their labels, and one pick-any question.
func twoQuestionForm(session string) map[string]any {
	return map[string]any{
		"sessionID": session,
		"message":   "I am migrating the orders service.",
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"db": map[string]any{
					"type": "string", "title": "Database", "description": "Which database should we use?",
					"oneOf": []any{
						map[string]any{"const": "postgres", "title": "Postgres"},
						map[string]any{"const": "sqlite", "title": "SQLite"},
					},
				},
				"feat": map[string]any{
					"type": "array", "title": "Features", "description": "Which features?",
					"items": map[string]any{"type": "string", "enum": []any{"Auth", "Billing", "Search"}},
				},
			},
			"required": []any{"db"},
		},
	}
}

// answerForm answers twoQuestionForm with keys as an operator would:
// Postgres, then Auth and Billing, then submit on the review tab.
func answerForm(t *testing.T, u *tui, answer <-chan elicitResult) {
	t.Helper()
	u.keys("1")
	u.waitFor("features", "Which features?", "Billing")
	u.keys("1", "2")
	u.keys("Tab")
	u.waitFor("review", "Review", "Database: Postgres", "Features: Auth, Billing")
	stillWaiting(t, answer)
	u.keys("Enter")
}

// askForm has an agent ask twoQuestionForm in session and waits until
// questiond lists it; the agent's answer comes on the channel.
func (d *daemon) askForm(t *testing.T, session string) <-chan elicitResult {
	t.Helper()
	answer := d.elicit(t.Context(), twoQuestionForm(session))
	d.waitPending(session, 1)
	return answer
}

// expectFormAnswer waits up to timeout for the agent's answer and fails the
// test, saying who got what, unless it is answerForm's: accept with
// Postgres, Auth and Billing.
func expectFormAnswer(t *testing.T, answer <-chan elicitResult, timeout time.Duration, who string) {
	t.Helper()
	got := await(t, answer, timeout)
	want := map[string]any{"db": "postgres", "feat": []any{"Auth", "Billing"}}
	if got.Action != "accept" || !reflect.DeepEqual(got.Content, want) {
		t.Fatalf("%s got %s %v, want accept %v", who, got.Action, got.Content, want)
	}
}

// formInTUI starts a daemon, has an agent ask twoQuestionForm in session
// and attaches a TUI to the session, waiting until its question panel
// shows texts.
func formInTUI(t *testing.T, session string, texts ...string) (*daemon, *tui, <-chan elicitResult) {
	t.Helper()
	d := startDaemon(t, daemonOptions{})
	answer := d.askForm(t, session)
	u := attach(t, "tui", d.URL, "--session", session)
	u.waitFor("panel", append(texts, panelHint)...)
	return d, u, answer
}

// panelHint is the question panel's key help, shown while a question is up.
const panelHint = "esc dismiss"

func TestFormAnsweredWithKeys(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	d, u, answer := formInTUI(t, "ses_e2eform", "Database", "Features", "Which database should we use?", "Postgres")
	answerForm(t, u, answer)

	expectFormAnswer(t, answer, 20*time.Second, "the agent")
	u.waitGone("answered", panelHint)
	if status, body := d.call(http.MethodGet, "/question", nil); status != http.StatusOK || string(body) != "[]" {
		t.Fatalf("GET /question after the answer: %d %s", status, body)
	}
}

func TestEscGivesTheAgentCancel(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	_, u, answer := formInTUI(t, "ses_e2eesc", "Database", "Features")
	stillWaiting(t, answer)
	u.keys("Escape")

	// questiond maps OpenCode's reject (what Esc sends) to MCP's cancel.
	if got := await(t, answer, 20*time.Second); got.Action != "cancel" || got.Content != nil {
		t.Fatalf("the agent got %s %v, want cancel without content", got.Action, got.Content)
	}
	u.waitGone("dismissed", panelHint)
	// History says why the question has no answers: the TUI shows a
	// question tool's error nowhere, so questiond adds it as text.
	u.waitFor("history", "The user dismissed this question")
}

// busyHint is the prompt footer while the session is busy (OpenCode's
// "running" state; questiond's sessions are busy while a question is
// pending).
const busyHint = "esc interrupt"

func TestSessionIsIdleAfterTheAnswer(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	_, u, answer := formInTUI(t, "ses_e2eidle", "Database")
	answerForm(t, u, answer)
	if got := await(t, answer, 20*time.Second); got.Action != "accept" {
		t.Fatalf("the agent got %s, want accept", got.Action)
	}
	u.waitGone("answered", panelHint)
	// The prompt is back; its footer must not say the session still runs.
	u.waitFor("prompt", "ctrl+p commands")
	u.waitGone("idle", busyHint)
}
