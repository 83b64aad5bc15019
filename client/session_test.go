package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/httpapi"
)

func TestSessionCapabilities(t *testing.T) {
	d := startDaemon(t, daemonConfig{api: httpapi.Options{Auth: httpapi.Auth{AgentTokens: map[string]string{
		"orchestrator": "orchestrator-token-0123456789", "worker": "worker-token-0123456789",
	}}}})
	orchestrator := newClient(t, d.URL, client.Options{Token: "orchestrator-token-0123456789"})
	worker := newClient(t, d.URL, client.Options{Token: "worker-token-0123456789"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s, err := orchestrator.GetSession(ctx, "ses_child")
	if err != nil || s.QuestionCapability != client.CapabilityUser || s.Configured {
		t.Fatalf("unknown session: %+v, %v; want the default user, not configured", s, err)
	}
	if _, err := orchestrator.SetSession(ctx, "ses_child", client.CapabilityParent, ""); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf("parent without a parent: %v, want ErrBadRequest", err)
	}
	s, err = orchestrator.SetSession(ctx, "ses_child", client.CapabilityParent, "ses_root")
	if err != nil || s.QuestionCapability != client.CapabilityParent || s.ParentSessionID != "ses_root" || !s.Configured {
		t.Fatalf("SetSession: %+v, %v", s, err)
	}
	if _, err := worker.SetSession(ctx, "ses_child", client.CapabilityUser, ""); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("another agent changing the session: %v, want ErrForbidden", err)
	}

	// The session is the orchestrator's: the worker may not ask in it.
	_, err = worker.Create(ctx, client.Params{Message: "Go on?", SessionID: "ses_child",
		RequestedSchema: []byte(`{"type":"object","properties":{"go":{"type":"boolean"}},"required":["go"]}`)})
	if !errors.Is(err, client.ErrForbidden) {
		t.Errorf("the worker asking in the orchestrator's session: %v, want ErrForbidden", err)
	}
	// The orchestrator asks for the child: the question is listed under the root.
	created, err := orchestrator.Create(ctx, client.Params{Message: "Go on?", SessionID: "ses_child",
		RequestedSchema: []byte(`{"type":"object","properties":{"go":{"type":"boolean"}},"required":["go"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if created.SessionID != "ses_root" || created.AskingSessionID != "ses_child" {
		t.Errorf("created under %q asked by %q; want ses_root asked by ses_child", created.SessionID, created.AskingSessionID)
	}
	if list := pendingQuestions(t, d.URL); len(list) != 1 || list[0].SessionID != "ses_root" {
		t.Errorf("operators see %+v", list)
	}

	// none: refused, nothing stored.
	if _, err := orchestrator.SetSession(ctx, "ses_child", client.CapabilityNone, ""); err != nil {
		t.Fatal(err)
	}
	_, err = orchestrator.Create(ctx, client.Params{Message: "Again?", SessionID: "ses_child",
		RequestedSchema: []byte(`{"type":"object","properties":{"go":{"type":"boolean"}}}`)})
	if !errors.Is(err, client.ErrForbidden) {
		t.Errorf("asking from a none session: %v, want ErrForbidden", err)
	}
	if list := pendingQuestions(t, d.URL); len(list) != 1 {
		t.Errorf("%d questions pending after the refusal, want the 1 from before", len(list))
	}

	old, err := orchestrator.DeleteSession(ctx, "ses_child")
	if err != nil || old.QuestionCapability != client.CapabilityNone {
		t.Fatalf("DeleteSession: %+v, %v", old, err)
	}
	if _, err := orchestrator.DeleteSession(ctx, "ses_child"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("deleting twice: %v, want ErrNotFound", err)
	}
}
