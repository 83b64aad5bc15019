package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/session"
)

func TestParseCapability(t *testing.T) {
	for _, c := range []session.Capability{session.User, session.Parent, session.None} {
		if got, err := session.ParseCapability(string(c)); got != c || err != nil {
			t.Errorf("ParseCapability(%q) = %q, %v; want %q", c, got, err, c)
		}
	}
	for _, s := range []string{"", "User", "PARENT", "admin", " none", "user "} {
		got, err := session.ParseCapability(s)
		if err == nil || got != "" {
			t.Errorf("ParseCapability(%q) = %q, %v; want an error", s, got, err)
			continue
		}
		if !strings.Contains(err.Error(), `"user", "parent" or "none"`) {
			t.Errorf("ParseCapability(%q): %v; want it to list the capabilities", s, err)
		}
	}
}

func TestValidID(t *testing.T) {
	valid := []string{"ses_1", "ses_a-B_9", "ses__", "ses_" + strings.Repeat("x", 100)}
	invalid := []string{"", "ses", "ses_", "ses-1", "SES_1", "sesa_1", "ses_a b", "ses_a/b", "ses_é", "ses_1\n", " ses_1",
		"ses_" + strings.Repeat("x", 101)}
	for _, id := range valid {
		if !session.ValidID(id) {
			t.Errorf("ValidID(%q) = false, want true", id)
		}
	}
	for _, id := range invalid {
		if session.ValidID(id) {
			t.Errorf("ValidID(%q) = true, want false", id)
		}
	}
}

func TestValidate(t *testing.T) {
	accepted := map[string]session.Session{
		"user":   {ID: "ses_1", Capability: session.User},
		"parent": {ID: "ses_1", Capability: session.Parent, ParentID: "ses_p"},
		"none":   {ID: "ses_1", Capability: session.None},
	}
	for name, s := range accepted {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: Validate(%+v) = %v, want nil", name, s, err)
		}
	}

	refused := map[string]struct {
		s     session.Session
		field string
	}{
		"empty id":              {session.Session{Capability: session.User}, "id"},
		"bad id":                {session.Session{ID: "sess_1", Capability: session.User}, "id"},
		"long id":               {session.Session{ID: "ses_" + strings.Repeat("x", 101), Capability: session.User}, "id"},
		"no capability":         {session.Session{ID: "ses_1"}, "questionCapability"},
		"unknown capability":    {session.Session{ID: "ses_1", Capability: "admin"}, "questionCapability"},
		"parent without parent": {session.Session{ID: "ses_1", Capability: session.Parent}, "parentSessionID"},
		"none with parent":      {session.Session{ID: "ses_1", Capability: session.None, ParentID: "ses_p"}, "parentSessionID"},
		"none with bad parent":  {session.Session{ID: "ses_1", Capability: session.None, ParentID: "nope"}, "parentSessionID"},
		"parent is itself":      {session.Session{ID: "ses_1", Capability: session.Parent, ParentID: "ses_1"}, "parentSessionID"},
		"user is own parent":    {session.Session{ID: "ses_1", Capability: session.User, ParentID: "ses_1"}, "parentSessionID"},
		"bad parent id":         {session.Session{ID: "ses_1", Capability: session.Parent, ParentID: "parent"}, "parentSessionID"},
		"user with bad parent":  {session.Session{ID: "ses_1", Capability: session.User, ParentID: "ses_ x"}, "parentSessionID"},
		"user with parent":      {session.Session{ID: "ses_1", Capability: session.User, ParentID: "ses_p"}, "parentSessionID"},
	}
	for name, tc := range refused {
		err := tc.s.Validate()
		var fe *session.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: Validate(%+v) = %v, want a *FieldError", name, tc.s, err)
			continue
		}
		if fe.Field != tc.field || fe.Problem == "" || err.Error() != tc.field+": "+fe.Problem {
			t.Errorf("%s: Validate = %q (field %q), want field %q with a problem", name, err, fe.Field, tc.field)
		}
	}
}
