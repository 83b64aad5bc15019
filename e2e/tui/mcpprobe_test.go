package tui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// At start the TUI asks GET /mcp for OpenCode's MCP server status; on
// questiond that path is the MCP endpoint. The TUI's plain call must be
// harmless: answered 200 {} (no MCP servers), with no error on screen.
func TestTUIsMCPStatusCallIsHarmless(t *testing.T) {
	for _, tc := range []struct {
		name     string
		password string
	}{
		{"open", ""},
		{"password", operatorPassword},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Heavy(t, "runs questiond and the OpenCode TUI")
			d := startDaemon(t, daemonOptions{password: tc.password})
			const session = "ses_e2emcpstatus"
			answer := d.askForm(t, session)

			rec := record(t, "tui", d.URL)
			args := []string{"--session", session}
			if tc.password != "" {
				args = append(args, "--password", tc.password)
			}
			u := attach(t, "tui", rec.URL, args...)
			u.waitFor("panel", "Database", panelHint)
			deadline := time.Now().Add(screenTimeout)
			for len(rec.find(http.MethodGet, "/mcp")) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the TUI never called GET /mcp; its traffic is in tui-traffic.txt")
				}
				time.Sleep(100 * time.Millisecond)
			}
			// Toasts last seconds; answering the question takes longer
			// than that, and every screen on the way is checked.
			screens := []string{u.shot("after-mcp")}
			answerForm(t, u, answer)
			screens = append(screens, u.waitGone("answered", panelHint))
			if got := await(t, answer, 20*time.Second); got.Action != "accept" {
				t.Errorf("the agent got %s, want accept", got.Action)
			}
			for _, s := range screens {
				for _, bad := range []string{"Error", "error", "Failed", "MCP"} {
					if strings.Contains(s, bad) {
						t.Errorf("the screen shows %q:\n%s", bad, trimScreen(s))
					}
				}
			}
			for _, ex := range rec.find(http.MethodGet, "/mcp") {
				t.Logf("the TUI's GET %s → %d %s", ex.Path, ex.Status, ex.Body)
				if ex.Status != http.StatusOK || strings.TrimSpace(ex.Body) != "{}" {
					t.Errorf("the TUI's GET %s got %d %s, want 200 {}", ex.Path, ex.Status, ex.Body)
				}
			}
		})
	}
}
