package tui

import (
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

func TestQuestionInAnotherSessionRaisesAToast(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	d := startDaemon(t, daemonOptions{})
	const here, there = "ses_e2ehere", "ses_e2ethere"
	d.elicit(t.Context(), twoQuestionForm(here))
	d.waitPending(here, 1)

	u := attach(t, "tui", d.URL, "--session", here)
	u.waitFor("panel", "Database", panelHint)
	// "Zanzibar" is nowhere on this session's screen: it can only come
	// from a toast about the other session's question.
	d.elicit(t.Context(), map[string]any{
		"sessionID": there,
		"message":   "Zanzibar release notes are ready.",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{
			"publish": map[string]any{"type": "boolean", "title": "Publish", "description": "Publish them?"},
		}},
	})
	d.waitPending(there, 1)
	u.waitFor("toast", "Zanzibar", "Database", panelHint)
}
