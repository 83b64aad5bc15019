package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/session"
)

func TestRouteQuestionFollowsTheCapability(t *testing.T) {
	ctx := t.Context()
	r := openRegistry(t, session.Options{Default: session.User})
	put := func(s session.Session) {
		t.Helper()
		if _, _, err := r.Put(ctx, s, "agent-1"); err != nil {
			t.Fatalf("put %s: %v", s.ID, err)
		}
	}
	put(session.Session{ID: "ses_lead", Capability: session.User})
	put(session.Session{ID: "ses_helper", Capability: session.Parent, ParentID: "ses_lead"})
	put(session.Session{ID: "ses_quiet", Capability: session.None})

	for _, tc := range []struct {
		id      string
		only    session.Capability
		want    session.Route
		refused string // a word of the reason, "" when routed
	}{
		{id: "ses_lead", want: session.Route{ListedUnder: "ses_lead"}},
		{id: "ses_nobody_set", want: session.Route{ListedUnder: "ses_nobody_set"}}, // the default
		{id: "ses_helper", want: session.Route{ListedUnder: "ses_lead", Asking: "ses_helper"}},
		{id: "ses_helper", only: session.Parent, want: session.Route{ListedUnder: "ses_lead", Asking: "ses_helper"}},
		{id: "ses_quiet", refused: `"none"`},
		{id: "ses_lead", only: session.Parent, refused: "no longer"},
	} {
		got, err := session.RouteQuestion(ctx, r, tc.id, tc.only)
		var refused *session.RefusedError
		switch {
		case tc.refused == "" && (err != nil || got != tc.want):
			t.Errorf("%s (only %q): %+v, %v; want %+v", tc.id, tc.only, got, err, tc.want)
		case tc.refused != "" && (!errors.As(err, &refused) || !strings.Contains(refused.Reason, tc.refused) || got != session.Route{}):
			t.Errorf("%s (only %q): %+v, %v; want a refusal saying %s", tc.id, tc.only, got, err, tc.refused)
		}
	}

	// A parent that turns "none" after its child was put: nobody can be
	// asked through it.
	put(session.Session{ID: "ses_lead", Capability: session.None})
	_, err := session.RouteQuestion(ctx, r, "ses_helper", "")
	var refused *session.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, "ses_lead") {
		t.Fatalf("through a parent that is now none: %v", err)
	}
}
