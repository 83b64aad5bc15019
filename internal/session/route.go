package session

import (
	"context"
	"fmt"
)

// Route is where a question asked for a session goes.
type Route struct {
	ListedUnder string // the session operators see it under
	Asking      string // the session that asked, when that is another one (its parent lists it)
}

// RefusedError is a session that may not ask anybody now; Reason says why,
// in words for the agent that asked.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// RouteQuestion decides by the session's capability whether a question may
// be asked at all and under which session it is listed: its own (User), its
// parent's (Parent, unless the parent's capability is None: a "none"
// parent is one nobody watches, and its capability may have changed since
// the child's record was put), or nobody's (None). When only is not empty
// the session must still have exactly that capability (a tool bound to it
// when its MCP session began); anything else fails closed. Refusals are a
// *RefusedError; a store that fails fails the route.
func RouteQuestion(ctx context.Context, store Records, id string, only Capability) (Route, error) {
	rec, err := store.Get(ctx, id)
	if err != nil {
		return Route{}, fmt.Errorf("session %s: %w", id, err)
	}
	return RouteRecord(ctx, store, rec, only)
}

// RouteRecord is RouteQuestion for a session whose record the caller has
// just read (Store.Get or Store.Claim).
func RouteRecord(ctx context.Context, store Records, rec Session, only Capability) (Route, error) {
	id := rec.ID
	if only != "" && rec.Capability != only {
		return Route{}, &RefusedError{fmt.Sprintf(
			"session %s may no longer ask this way: its question capability is now %q (it was %q when this MCP session began); nothing was asked",
			id, rec.Capability, only)}
	}
	switch rec.Capability {
	case None:
		return Route{}, &RefusedError{fmt.Sprintf(
			"session %s may not ask questions: its question capability is \"none\"; continue with your best judgment", id)}
	case Parent:
		return throughParent(ctx, store, rec)
	}
	return Route{ListedUnder: id}, nil
}

func throughParent(ctx context.Context, store Records, child Session) (Route, error) {
	parent, err := store.Get(ctx, child.ParentID)
	if err != nil {
		return Route{}, fmt.Errorf("session %s: %w", child.ParentID, err)
	}
	if parent.Capability == None {
		return Route{}, &RefusedError{fmt.Sprintf(
			"session %s asks through its parent session %s, whose question capability is \"none\": nobody can be asked; continue with your best judgment",
			child.ID, child.ParentID)}
	}
	if parent.agentOwned() && parent.SetBy != child.SetBy {
		// Put refuses this; a record kept from before the rule must not
		// list one agent's questions under another's session either.
		return Route{}, &RefusedError{fmt.Sprintf(
			"session %s asks through its parent session %s, which belongs to another agent: nothing was asked; set parentSessionID to a session of your own",
			child.ID, child.ParentID)}
	}
	return Route{ListedUnder: child.ParentID, Asking: child.ID}, nil
}
