package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/session"
)

// A record set through one replica applies on the others at once; only its
// agent may change or remove it; the bound holds across replicas.
func TestSessionsAcrossReplicas(t *testing.T) {
	url := database(t)
	a, err := open(t, url).Sessions(session.Options{MaxSessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(t, url).Sessions(session.Options{MaxSessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := b.Get(ctx, "ses_x")
	if err != nil || got.Configured || got.Capability != session.User {
		t.Fatalf("unset session: %+v, %v; want the default", got, err)
	}
	if _, created, err := a.Put(ctx, session.Session{ID: "ses_x", Capability: session.None}, "agent-1"); err != nil || !created {
		t.Fatalf("put: created %v, %v", created, err)
	}
	got, err = b.Get(ctx, "ses_x")
	if err != nil || !got.Configured || got.Capability != session.None || got.SetBy != "agent-1" {
		t.Fatalf("B reads %+v, %v; want A's record", got, err)
	}
	if _, _, err := b.Put(ctx, session.Session{ID: "ses_x", Capability: session.User}, "agent-2"); !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("another agent's change: %v; want ErrForbidden", err)
	}
	if _, err := b.Delete(ctx, "ses_x", "agent-2"); !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("another agent's delete: %v; want ErrForbidden", err)
	}
	if _, _, err := b.Put(ctx, session.Session{ID: "ses_bad", Capability: session.Parent}, "agent-1"); err == nil {
		t.Fatal("a parent session without a parent was stored")
	}
	// Two replicas racing for the last place: one gets it.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range []interface {
		Put(context.Context, session.Session, string) (session.Session, bool, error)
	}{a, b} {
		wg.Go(func() {
			_, _, errs[i] = r.Put(ctx, session.Session{ID: []string{"ses_y", "ses_z"}[i], Capability: session.User}, "agent-1")
		})
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), session.ErrFull) {
		t.Fatalf("racing for the last place: %v; want one ErrFull", errs)
	}
	if old, err := a.Delete(ctx, "ses_x", "agent-1"); err != nil || old.Capability != session.None {
		t.Fatalf("delete by its agent: %+v, %v", old, err)
	}
	if _, err := b.Delete(ctx, "ses_x", "agent-1"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("delete again: %v; want ErrNotFound", err)
	}
}

// A session an agent asked in through one replica is that agent's on every
// replica, its configuration removed or not, until its claim lapses; the
// per-agent bound holds across replicas.
func TestSessionClaimsAcrossReplicas(t *testing.T) {
	url := database(t)
	const hold = 400 * time.Millisecond
	opts := session.Options{MaxSessionsPerAgent: 1, ClaimHold: hold}
	a, err := open(t, url).Sessions(opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(t, url).Sessions(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := a.Claim(ctx, "ses_a", "alpha"); err != nil || got.Configured || got.SetBy != "alpha" {
		t.Fatalf("alpha's claim: %+v, %v", got, err)
	}
	var owned *session.OwnedError
	if _, _, err := b.Put(ctx, session.Session{ID: "ses_a", Capability: session.None}, "bravo"); !errors.As(err, &owned) || owned.Owner != "alpha" {
		t.Fatalf("bravo's put on B: %v; want alpha's OwnedError", err)
	}
	if _, err := b.Claim(ctx, "ses_a", "bravo"); !errors.Is(err, session.ErrForbidden) {
		t.Fatalf("bravo's claim on B: %v; want ErrForbidden", err)
	}
	if _, _, err := b.Put(ctx, session.Session{ID: "ses_a", Capability: session.None}, "alpha"); err != nil {
		t.Fatalf("alpha's put on B: %v", err)
	}
	if _, _, err := a.Put(ctx, session.Session{ID: "ses_a2", Capability: session.None}, "alpha"); !errors.Is(err, session.ErrAgentFull) {
		t.Fatalf("alpha's second record: %v; want ErrAgentFull", err)
	}
	if _, _, err := a.Put(ctx, session.Session{ID: "ses_b", Capability: session.Parent, ParentID: "ses_a"}, "bravo"); !errors.As(err, &owned) || owned.Field != "parentSessionID" {
		t.Fatalf("bravo's child of alpha's session: %v; want an OwnedError at parentSessionID", err)
	}
	if _, err := a.Delete(ctx, "ses_a", "alpha"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "ses_a"); err != nil || got.Configured || got.SetBy != "alpha" {
		t.Fatalf("after alpha's delete, B reads %+v, %v; want alpha's claim", got, err)
	}
	if _, _, err := b.Put(ctx, session.Session{ID: "ses_a", Capability: session.None}, session.Operator); err != nil {
		t.Fatalf("the operator's put: %v", err)
	}
	if _, err := a.Delete(ctx, "ses_a", session.Operator); err != nil {
		t.Fatalf("the operator's delete: %v", err)
	}
	time.Sleep(hold + hold/4 + 100*time.Millisecond)
	if got, err := a.Get(ctx, "ses_a"); err != nil || got.SetBy != "" {
		t.Fatalf("after the hold: %+v, %v; want nobody's", got, err)
	}
	if _, err := b.Claim(ctx, "ses_a", "bravo"); err != nil {
		t.Fatalf("bravo's claim once alpha's lapsed: %v", err)
	}
}
