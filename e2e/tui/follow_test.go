package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// answerWithin bounds how long an agent waits for the TUI's answer.
const answerWithin = 20 * time.Second

// booleanQuestion is a one-question form whose question text is text.
func booleanQuestion(session, message, text string) map[string]any {
	return map[string]any{
		"sessionID": session,
		"message":   message,
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{
			"ok": map[string]any{"type": "boolean", "title": "OK", "description": text},
		}},
	}
}

// Two questions of one session come to the TUI one after the other: the
// second panel shows only once the first is answered, and both agents get
// their answers.
func TestSessionQuestionsComeOneAtATime(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	d := startDaemon(t, daemonOptions{})
	const session = "ses_e2equeue"
	first := d.elicit(t.Context(), booleanQuestion(session, "First of two.", "Rotate the keys?"))
	d.waitPending(session, 1)
	second := d.elicit(t.Context(), booleanQuestion(session, "Second of two.", "Restart the workers?"))
	d.waitPending(session, 2)

	u := attach(t, "tui", d.URL, "--session", session)
	screen := u.waitFor("first", "Rotate the keys?", panelHint)
	if strings.Contains(screen, "Restart the workers?") {
		t.Fatalf("the second question shows while the first is pending:\n%s", screen)
	}
	u.keys("1")
	if got := await(t, first, answerWithin); got.Action != "accept" || got.Content["ok"] != true {
		t.Fatalf("first agent got %+v", got)
	}
	u.waitFor("second", "Restart the workers?", panelHint)
	u.keys("2")
	if got := await(t, second, answerWithin); got.Action != "accept" || got.Content["ok"] != false {
		t.Fatalf("second agent got %+v", got)
	}
	u.waitGone("done", panelHint)
}

// With --console-follow, answering a session's last question moves the TUI
// to the session whose question waits.
func TestConsoleFollowMovesToTheNextSession(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	d := startDaemon(t, daemonOptions{args: []string{"--console-follow"}})
	const here, there = "ses_e2efollowa", "ses_e2efollowb"
	answer := d.elicit(t.Context(), booleanQuestion(here, "Here first.", "Ship the hotfix?"))
	d.waitPending(here, 1)
	d.elicit(t.Context(), booleanQuestion(there, "Over there.", "Archive the old bucket?"))
	d.waitPending(there, 1)

	u := attach(t, "tui", d.URL, "--session", here)
	u.waitFor("here", "Ship the hotfix?", panelHint)
	u.keys("1")
	if got := await(t, answer, answerWithin); got.Action != "accept" {
		t.Fatalf("agent got %+v", got)
	}
	u.waitFor("moved", "Archive the old bucket?", panelHint)
}
