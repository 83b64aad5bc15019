package tui

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

func TestTypedPromptIsRefused(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	d := startDaemon(t, daemonOptions{})
	const session = "ses_e2eprompt"
	// A session with history and nothing pending: the TUI shows its prompt.
	status, body := d.call(http.MethodPost, "/elicitations", twoQuestionForm(session))
	var created struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal(body, &created) != nil {
		t.Fatalf("POST /elicitations: %d %s", status, body)
	}
	if status, body := d.call(http.MethodDelete, "/elicitations/"+created.ID, nil); status != http.StatusOK {
		t.Fatalf("DELETE /elicitations/%s: %d %s", created.ID, status, body)
	}

	u := attach(t, "tui", d.URL, "--session", session)
	u.waitFor("prompt", "ctrl+p commands", "I am migrating the orders service.")
	u.typeText("please deploy to staging")
	u.keys("Enter")
	screen := u.waitFor("refused", "Failed to send prompt")
	if toast := toastText(screen, "Failed to send prompt"); !strings.Contains(toast, "does not run an agent") {
		t.Fatalf("the refusal toast says %q, want questiond's message; the screen:\n%s", toast, trimScreen(screen))
	}

	// The TUI keeps running: a new question in the session shows and is
	// answered.
	answer := d.elicit(t.Context(), twoQuestionForm(session))
	u.waitFor("next-question", "Database", panelHint)
	if exited, status := u.exited(); exited {
		t.Fatalf("the TUI exited (%s) after the refusal", status)
	}
	u.keys("Escape")
	if got := await(t, answer, 20*time.Second); got.Action != "cancel" {
		t.Fatalf("the agent got %s after Esc, want cancel", got.Action)
	}
}

// toastText is the text of the toast whose title shows on screen: the
// lines under the title, in the title's columns, joined by spaces (a toast
// wraps its message to its own width).
func toastText(screen, title string) string {
	lines := strings.Split(screen, "\n")
	for i, line := range lines {
		at := strings.Index(line, title)
		if at < 0 {
			continue
		}
		col := len([]rune(line[:at]))
		var words []string
		for _, below := range lines[i+1:] {
			runes := []rune(below)
			if col >= len(runes) {
				break
			}
			seg := string(runes[col:])
			if end := strings.Index(seg, "┃"); end >= 0 {
				seg = seg[:end]
			}
			seg = strings.TrimSpace(seg)
			if seg == "" {
				if len(words) > 0 {
					break
				}
				continue
			}
			words = append(words, seg)
		}
		return strings.Join(words, " ")
	}
	return ""
}
