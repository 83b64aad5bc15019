package main

import (
	"net/http"
	"syscall"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

// A session set to "none" must stay "none" across a restart: a capability
// that fell back to the default would let it ask after all.
func TestRestartKeepsSessionCapabilities(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	dataDir := t.TempDir()
	first := startProcess(t, "--data-dir", dataDir)
	for path, body := range map[string]string{
		"/sessions/ses_quiet": `{"questionCapability":"none"}`,
		"/sessions/ses_child": `{"questionCapability":"parent","parentSessionID":"ses_root"}`,
	} {
		if status, err := first.call(http.MethodPut, path, body, nil); err != nil || status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %v", path, status, err)
		}
	}
	if err := first.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, first.Output())
	}

	second := startProcess(t, "--data-dir", dataDir)
	var quiet struct {
		QuestionCapability string `json:"questionCapability"`
		Configured         bool   `json:"configured"`
	}
	if status, err := second.call(http.MethodGet, "/sessions/ses_quiet", "", &quiet); err != nil || status != http.StatusOK {
		t.Fatalf("GET /sessions/ses_quiet: %d %v", status, err)
	}
	if quiet.QuestionCapability != "none" || !quiet.Configured {
		t.Fatalf("after restart ses_quiet is %+v, want none", quiet)
	}
	body := `{"message":"May I?","sessionID":"ses_quiet","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`
	if status, err := second.call(http.MethodPost, "/elicitations", body, nil); err != nil || status != http.StatusForbidden {
		t.Fatalf("asking from ses_quiet after restart: %d %v, want 403", status, err)
	}
	var asked elicitationView
	body = `{"message":"Which?","sessionID":"ses_child","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`
	if status, err := second.call(http.MethodPost, "/elicitations", body, &asked); err != nil || status != http.StatusCreated {
		t.Fatalf("asking from ses_child after restart: %d %v", status, err)
	}
	if asked.SessionID != "ses_root" {
		t.Errorf("ses_child's question is listed under %q after restart, want its parent ses_root", asked.SessionID)
	}
}
