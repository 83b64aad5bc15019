package session

import (
	"errors"
	"fmt"
	"time"
)

// Who owns a session. A session belongs to the agent that first used it:
// that configured it (Put), asked in it (Claim) or named it as the parent of
// one of its own sessions. Only its owner may change its record or ask in
// it, and only sessions of the same owner may ask through it; an operator
// may change any record. A session used while questiond ran without agent
// tokens has no owner ("") and is anyone's, as it always was. Every Store
// applies the rules below, so a Registry and a shared database agree.

// Operator is the owner of a record an operator set on a session no agent
// owned. Agent names cannot hold a space, so no agent is called this. An
// operator's session is the operator's to configure; any agent may ask in
// it.
const Operator = "operator console"

// DefaultMaxSessionsPerAgent is how many records one agent keeps by
// default (--max-sessions-per-agent): a tenth of the default total, so one
// agent token cannot take every place.
const DefaultMaxSessionsPerAgent = DefaultMaxSessions / 10

// DefaultMaxSessions is how many session records are kept in total by
// default (--max-sessions).
const DefaultMaxSessions = 100000

// ErrAgentFull: the agent holds its maximum number of session records.
var ErrAgentFull = errors.New("too many session records for this agent")

// OwnedError refuses a change or a question because the session, or the
// parent it names, belongs to another agent. It is an ErrForbidden.
type OwnedError struct {
	ID    string // the session that is another's
	Owner string // the agent it belongs to
	Field string // what named it in the request: "sessionID" or "parentSessionID"
}

func (e *OwnedError) Error() string {
	if e.Field == "parentSessionID" {
		return fmt.Sprintf("parent session %s belongs to agent %s; a session can ask only through a parent session of its own agent", e.ID, e.Owner)
	}
	return fmt.Sprintf("session %s belongs to agent %s; only that agent (or an operator) can change it, and only that agent can ask in it", e.ID, e.Owner)
}

// Is makes an OwnedError an ErrForbidden.
func (e *OwnedError) Is(target error) bool { return target == ErrForbidden }

// claim is a record that only says who owns a session nobody configured:
// the default capability still applies.
func (s Session) claim() bool { return s.Capability == "" }

// lapsed reports whether s is a claim whose hold is over at now: nobody
// asked in the session or through it for longer than hold (and a quarter,
// as a claim is renewed only every quarter of it; see PlanClaim), so no
// question of its owner can be held in it any more. Such a claim is as
// good as no record. hold 0: claims never lapse.
func (s Session) lapsed(now time.Time, hold time.Duration) bool {
	return hold > 0 && s.claim() && now.Sub(s.UpdatedAt) > hold+hold/4
}

// Live is the record stored for a session as the rules see it at now:
// exists is false for a claim whose hold is over.
func Live(s Session, exists bool, now time.Time, hold time.Duration) (Session, bool) {
	if !exists || s.lapsed(now, hold) {
		return Session{}, false
	}
	return s, true
}

// counted reports whether a record counts against MaxSessions and
// MaxSessionsPerAgent: every record Put made (configurations and the
// parents they claimed), not the claims questions made, which an agent
// needs no room for.
func (s Session) counted() bool { return !s.claim() || !s.Used }

// agentOwned reports whether s belongs to an agent (not to nobody, not to
// an operator).
func (s Session) agentOwned() bool { return s.SetBy != "" && s.SetBy != Operator }

// view is a stored record as Get answers it: a claim has the default
// capability and is not configured.
func (s Session) view(def Capability) Session {
	if s.claim() {
		s.Capability, s.Configured = def, false
		return s
	}
	s.Configured = true
	return s
}

// mayChange reports whether agent may change or remove s: its owner may,
// an operator may, and anyone may change a record nobody owns.
func mayChange(s Session, agent string) bool {
	return agent == Operator || s.SetBy == "" || s.SetBy == agent
}

// forbid is the refusal of agent's change to s, or nil.
func forbid(s Session, agent, field string) error {
	if mayChange(s, agent) {
		return nil
	}
	return &OwnedError{ID: s.ID, Owner: s.SetBy, Field: field}
}

// Change is what a Put writes: the record and, when the record names a
// parent nobody used yet, the claim that makes the parent its owner's.
type Change struct {
	Record      Session
	ParentClaim *Session
	Created     bool
	// Adds is how many counted records the change adds.
	Adds int
}

// PlanPut applies the ownership rules to a Put of s by agent, given the
// records stored now for s (old, when exists) and for its parent (parent,
// when parentExists). def is the capability of sessions nobody configured.
// Stores call it while writers are serialised and then write the Change.
func PlanPut(s Session, agent string, old Session, exists bool, parent Session, parentExists bool, def Capability, now time.Time) (Change, error) {
	if err := s.Validate(); err != nil {
		return Change{}, err
	}
	s.SetBy, s.Used = agent, false
	if exists {
		if err := forbid(old, agent, "sessionID"); err != nil {
			return Change{}, err
		}
		s.Used = old.Used
		if agent == Operator && old.SetBy != "" {
			s.SetBy = old.SetBy // an operator's change leaves the session its owner's
		}
	}
	s.UpdatedAt = now.UTC().Round(time.Millisecond)
	c := Change{Record: s, Created: !exists || old.claim()}
	if !exists || !old.counted() {
		c.Adds++
	}
	if s.Capability != Parent {
		return c, nil
	}
	if parentExists && parent.agentOwned() && parent.SetBy != s.SetBy {
		return Change{}, &OwnedError{ID: s.ParentID, Owner: parent.SetBy, Field: "parentSessionID"}
	}
	capability := def
	if parentExists && !parent.claim() {
		capability = parent.Capability
	}
	if capability == None {
		return Change{}, ParentOnNone(s.ParentID)
	}
	if !parentExists && s.agentOwned() {
		c.ParentClaim = &Session{ID: s.ParentID, SetBy: s.SetBy, UpdatedAt: s.UpdatedAt}
		c.Adds++
	}
	return c, nil
}

// CheckRoom refuses a change that would take more records than opts allow:
// total is every counted record stored now, mine those of the change's
// owner. An operator's change is bound by the total only.
func CheckRoom(c Change, agent string, total, mine int, opts Options) error {
	if c.Adds == 0 {
		return nil
	}
	if opts.MaxSessions > 0 && total+c.Adds > opts.MaxSessions {
		return fmt.Errorf("%w: at most %d (--max-sessions)", ErrFull, opts.MaxSessions)
	}
	if opts.MaxSessionsPerAgent > 0 && agent == c.Record.SetBy && c.Record.agentOwned() && mine+c.Adds > opts.MaxSessionsPerAgent {
		return fmt.Errorf("%w: agent %s holds %d of at most %d (--max-sessions-per-agent)", ErrAgentFull, agent, mine, opts.MaxSessionsPerAgent)
	}
	return nil
}

// PlanDelete applies the rules to agent's Delete of old (exists when
// stored): the record to keep instead (a claim: a session its owner used
// stays its owner's), or nil to remove it.
func PlanDelete(id string, old Session, exists bool, agent string, now time.Time) (*Session, error) {
	if exists {
		if err := forbid(old, agent, "sessionID"); err != nil {
			return nil, err
		}
	}
	if !exists || old.claim() {
		return nil, ErrNotFound
	}
	if !old.Used || !old.agentOwned() {
		return nil, nil
	}
	return &Session{ID: id, SetBy: old.SetBy, Used: true, UpdatedAt: now.UTC().Round(time.Millisecond)}, nil
}

// PlanClaim applies the rules to agent's question in session id, whose
// live record is rec (exists when there is one; see Live): the record to
// write so the session is agent's (write false when it already is, and a
// claim of it needs no renewal within hold), or an *OwnedError when it is
// another agent's. An anonymous agent ("") claims nothing.
func PlanClaim(id string, rec Session, exists bool, agent string, now time.Time, hold time.Duration) (next Session, write bool, err error) {
	if !exists {
		rec = Session{ID: id}
	}
	renewed := !rec.claim() || hold == 0 || now.Sub(rec.UpdatedAt) < hold/4
	switch {
	case agent == "" || rec.SetBy == Operator || (rec.SetBy == agent && rec.Used && renewed):
		return rec, false, nil
	case rec.SetBy != "" && rec.SetBy != agent:
		return Session{}, false, &OwnedError{ID: id, Owner: rec.SetBy, Field: "sessionID"}
	}
	rec.SetBy, rec.Used = agent, true
	if rec.claim() {
		rec.UpdatedAt = now.UTC().Round(time.Millisecond)
	}
	return rec, true, nil
}

// validStored checks a record read back from a journal or a database.
func (s Session) validStored() error {
	if s.claim() {
		if !ValidID(s.ID) || s.SetBy == "" || s.ParentID != "" {
			return fmt.Errorf("a claim needs a valid id, an owner and no parent")
		}
		return nil
	}
	return s.Validate()
}

// ValidStored checks a record read back from a journal or a database: a
// valid configuration, or a claim naming its owner.
func ValidStored(s Session) error { return s.validStored() }

// View is a stored record as Get answers it (see Store.Get).
func View(s Session, def Capability) Session { return s.view(def) }

// Counted reports whether a stored record counts against the session
// limits (see CheckRoom).
func Counted(s Session) bool { return s.counted() }
