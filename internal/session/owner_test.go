package session_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/session"
)

// A session an agent asked in is the agent's; another agent can neither
// configure it nor ask in it, and an operator can configure it without
// taking it.
func TestClaimMakesTheSessionTheAgents(t *testing.T) {
	ctx := t.Context()
	r := openRegistry(t, session.Options{Journal: newFakeJournal()})
	got, err := r.Claim(ctx, "ses_a", "alpha")
	if err != nil || got.Configured || got.Capability != session.User || got.SetBy != "alpha" {
		t.Fatalf("claim = %+v, %v; want alpha's, unconfigured, the default", got, err)
	}
	var owned *session.OwnedError
	if _, err := r.Claim(ctx, "ses_a", "bravo"); !errors.As(err, &owned) || owned.Owner != "alpha" || owned.Field != "sessionID" {
		t.Fatalf("bravo's claim: %v; want alpha's OwnedError at sessionID", err)
	}
	if _, _, err := r.Put(ctx, session.Session{ID: "ses_a", Capability: session.None}, "bravo"); !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("bravo's put: %v; want ErrForbidden", err)
	}
	if _, err := r.Claim(ctx, "ses_x", ""); err != nil || r.Len() != 1 {
		t.Fatalf("an anonymous claim: %v, %d records; want nothing stored", err, r.Len())
	}
	stored, created, err := r.Put(ctx, session.Session{ID: "ses_a", Capability: session.None}, session.Operator)
	if err != nil || !created || stored.SetBy != "alpha" {
		t.Fatalf("the operator's put: %+v, created %v, %v; want alpha's still", stored, created, err)
	}
	if _, err := r.Delete(ctx, "ses_a", "alpha"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, r, "ses_a"); got.Configured || got.SetBy != "alpha" {
		t.Fatalf("after the delete: %+v; want alpha's claim", got)
	}
}

// A claim lapses once nobody asked in the session for longer than its
// hold: then another agent may take it, and the registry forgets it.
func TestAClaimLapsesAfterItsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		const hold = time.Hour
		j := newFakeJournal()
		r := openRegistry(t, session.Options{Journal: j, ClaimHold: hold})
		if _, err := r.Claim(ctx, "ses_a", "alpha"); err != nil {
			t.Fatal(err)
		}
		mustPut(t, r, session.Session{ID: "ses_child", Capability: session.Parent, ParentID: "ses_p"}, "alpha")
		// Asking again within the hold keeps the session alpha's.
		for range 8 {
			time.Sleep(hold / 2)
			if _, err := r.Claim(ctx, "ses_a", "alpha"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Claim(ctx, "ses_a", "bravo"); !errors.Is(err, session.ErrForbidden) {
			t.Fatalf("bravo's claim of a session alpha keeps asking in: %v", err)
		}
		// The parent alpha named and never asked through has lapsed.
		if _, _, err := r.Put(ctx, session.Session{ID: "ses_p", Capability: session.None}, "bravo"); err != nil {
			t.Fatalf("bravo's put of a lapsed parent claim: %v", err)
		}
		time.Sleep(hold + hold/4 + time.Second)
		if got := mustGet(t, r, "ses_a"); got.SetBy != "" {
			t.Fatalf("after the hold: %+v; want nobody's", got)
		}
		if _, err := r.Claim(ctx, "ses_other", "alpha"); err != nil { // sweeps
			t.Fatal(err)
		}
		j.mu.Lock()
		_, kept := j.records["ses_a"]
		j.mu.Unlock()
		if kept {
			t.Error("the lapsed claim is still in the journal")
		}
		if _, err := r.Claim(ctx, "ses_a", "bravo"); err != nil {
			t.Fatalf("bravo's claim after alpha's lapsed: %v", err)
		}
	})
}

// --max-sessions-per-agent counts what an agent configured and the parents
// it named, not the sessions it asked in.
func TestMaxSessionsPerAgent(t *testing.T) {
	ctx := t.Context()
	r := openRegistry(t, session.Options{MaxSessions: 5, MaxSessionsPerAgent: 2})
	mustPut(t, r, session.Session{ID: "ses_a1", Capability: session.None}, "alpha")
	if _, _, err := r.Put(ctx, session.Session{ID: "ses_a2", Capability: session.Parent, ParentID: "ses_a3"}, "alpha"); !errors.Is(err, session.ErrAgentFull) {
		t.Fatalf("a child and a new parent beyond the cap: %v; want ErrAgentFull", err)
	}
	if _, err := r.Claim(ctx, "ses_a3", "alpha"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, r, session.Session{ID: "ses_a2", Capability: session.Parent, ParentID: "ses_a3"}, "alpha")
	if _, _, err := r.Put(ctx, session.Session{ID: "ses_a4", Capability: session.None}, "alpha"); !errors.Is(err, session.ErrAgentFull) {
		t.Fatalf("a third record: %v; want ErrAgentFull", err)
	}
	mustPut(t, r, session.Session{ID: "ses_b1", Capability: session.None}, "bravo")
	mustPut(t, r, session.Session{ID: "ses_o1", Capability: session.None}, session.Operator)
	mustPut(t, r, session.Session{ID: "ses_b2", Capability: session.None}, "bravo")
	if _, _, err := r.Put(ctx, session.Session{ID: "ses_o2", Capability: session.None}, session.Operator); !errors.Is(err, session.ErrFull) {
		t.Fatalf("beyond the total: %v; want ErrFull", err)
	}
}
