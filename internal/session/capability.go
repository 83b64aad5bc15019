package session

import (
	"fmt"
	"regexp"
	"time"
)

// Capability is what a session may ask.
type Capability string

const (
	// User sessions ask the operator directly.
	User Capability = "user"
	// Parent sessions ask through their parent session: their questions are
	// listed and announced under the parent's id.
	Parent Capability = "parent"
	// None sessions may ask nobody; every question they try is refused.
	None Capability = "none"
)

// DefaultCapability is the capability of sessions nobody configured when
// Options.Default is zero (--default-question-capability): anyone may ask
// the operator until told otherwise.
const DefaultCapability = User

// ParseCapability reads a capability by its wire name.
func ParseCapability(s string) (Capability, error) {
	switch c := Capability(s); c {
	case User, Parent, None:
		return c, nil
	}
	return "", fmt.Errorf("expected \"user\", \"parent\" or \"none\", got %q", s)
}

// idPattern is what questiond accepts as a session id: OpenCode's "ses"
// prefix, an underscore, then up to 100 letters, digits, "_" or "-".
var idPattern = regexp.MustCompile(`^ses_[0-9A-Za-z_-]{1,100}$`)

// ValidID reports whether id is a session id questiond accepts.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Session is one session's record.
type Session struct {
	ID         string     `json:"id"`
	Capability Capability `json:"questionCapability"`
	// ParentID is the session a Parent session asks through.
	ParentID string `json:"parentSessionID,omitempty"`
	// SetBy is the session's owner: the agent that set the record or first
	// asked in the session ("" when questiond runs without agent tokens,
	// Operator for an operator's); see owner.go.
	SetBy string `json:"setBy,omitempty"`
	// Used is set once its owner asked in the session: it stays the
	// owner's when its configuration is removed.
	Used      bool      `json:"used,omitempty"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// Configured is false for a session nobody set: the default applies.
	Configured bool `json:"-"`
}

// Validate checks the combination of fields: a parent for Parent sessions
// and only for them (a parent named by any other session would do nothing,
// so it is refused rather than kept). The error names the offending field as
// the wire does.
func (s Session) Validate() error {
	if !ValidID(s.ID) {
		return &FieldError{Field: "id", Problem: fmt.Sprintf("expected a session id like \"ses_…\" (letters, digits, _ or -, at most 104 characters), got %q", s.ID)}
	}
	if _, err := ParseCapability(string(s.Capability)); err != nil {
		return &FieldError{Field: "questionCapability", Problem: err.Error()}
	}
	switch {
	case s.Capability == Parent && s.ParentID == "":
		return &FieldError{Field: "parentSessionID", Problem: "a session with capability \"parent\" needs the id of its parent session"}
	case s.Capability == None && s.ParentID != "":
		return &FieldError{Field: "parentSessionID", Problem: "a session with capability \"none\" asks nobody, so it cannot name a parent to ask"}
	case s.Capability == User && s.ParentID != "":
		return &FieldError{Field: "parentSessionID", Problem: "a session with capability \"user\" asks the operator itself; only \"parent\" sessions name a parent (leave parentSessionID out, or use \"parent\")"}
	case s.ParentID != "" && !ValidID(s.ParentID):
		return &FieldError{Field: "parentSessionID", Problem: fmt.Sprintf("expected a session id like \"ses_…\", got %q", s.ParentID)}
	case s.ParentID != "" && s.ParentID == s.ID:
		return &FieldError{Field: "parentSessionID", Problem: "a session cannot be its own parent"}
	}
	return nil
}

// FieldError is a record that fails Validate.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }
