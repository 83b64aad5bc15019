package tui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

const operatorPassword = "correct horse battery staple"

func TestOperatorPassword(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI")
	d := startDaemon(t, daemonOptions{password: operatorPassword})
	const session = "ses_e2eauth"
	answer := d.askForm(t, session)

	wrong := record(t, "wrong", d.URL)
	w := attach(t, "wrong", wrong.URL, "--session", session, "--password", "not the password")
	// attach checks the session before its UI starts: with the wrong
	// password that check is refused and the TUI exits with the error.
	w.waitUntil("exited", "the TUI to exit", func(string) bool { exited, _ := w.exited(); return exited })
	if _, status := w.exited(); status == "0" {
		t.Errorf("the TUI exited with status 0 after a wrong password")
	}
	if log := w.log(); !strings.Contains(log, "401 Unauthorized") {
		t.Errorf("the TUI's error output does not say 401 Unauthorized:\n%s", log)
	}
	for _, ex := range wrong.exchanges() {
		if ex.Status != http.StatusUnauthorized {
			t.Errorf("with a wrong password, %s %s got %d %s", ex.Method, ex.Path, ex.Status, ex.Body)
		}
	}
	if len(wrong.exchanges()) == 0 {
		t.Error("the TUI sent no request with the wrong password")
	}
	stillWaiting(t, answer)
	d.waitPending(session, 1)

	u := attach(t, "right", d.URL, "--session", session, "--password", operatorPassword)
	u.waitFor("panel", "Database", "Features", panelHint)
	answerForm(t, u, answer)
	expectFormAnswer(t, answer, 20*time.Second, "the agent")
	u.waitGone("answered", panelHint)
}
