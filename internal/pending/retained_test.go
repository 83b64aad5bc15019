package pending_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/pending"
)

func ownedBy(owner string) func(*pending.Question) {
	return func(q *pending.Question) { q.Owner = owner }
}

// endAs creates and replies n questions of owner, ids prefix-0…
func endAs(t *testing.T, m *pending.Store, owner, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		mustCreate(t, m, ask(id, ownedBy(owner)))
		if _, err := m.Settle(t.Context(), id, replied("Red")); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func retained(t *testing.T, m *pending.Store, ids ...string) []string {
	t.Helper()
	var kept []string
	for _, id := range ids {
		_, err := m.Get(t.Context(), id)
		switch {
		case err == nil:
			kept = append(kept, id)
		case !errors.Is(err, pending.ErrNotFound):
			t.Fatal(err)
		}
	}
	return kept
}

// Beyond MaxRetainedPerAgent an agent forgets its own oldest results;
// beyond MaxRetained the agent holding the most does, so an agent with few
// results keeps them whoever churns.
func TestRetentionIsBoundedPerAgent(t *testing.T) {
	t.Parallel()
	m := newStore(t, pending.Options{MaxRetained: 5, MaxRetainedPerAgent: 3})
	alpha := endAs(t, m, "alpha", "a", 1)
	beta := endAs(t, m, "beta", "b", 10)
	if kept := retained(t, m, beta...); strings.Join(kept, " ") != "b-7 b-8 b-9" {
		t.Fatalf("beta keeps %v, want its newest 3", kept)
	}
	gamma := endAs(t, m, "gamma", "g", 2) // 6 results: beta, the heaviest, forgets one
	if kept := retained(t, m, beta...); strings.Join(kept, " ") != "b-8 b-9" {
		t.Fatalf("beta keeps %v beyond the total, want its newest 2", kept)
	}
	if kept := retained(t, m, append(alpha, gamma...)...); len(kept) != 3 {
		t.Fatalf("alpha and gamma keep %v, want all 3", kept)
	}
	// The unauthenticated owner has no bound of its own, only the total:
	// once it holds as many as the heaviest, it forgets its own oldest.
	anon := endAs(t, m, "", "x", 4)
	if kept := retained(t, m, anon...); len(kept) == 0 || kept[len(kept)-1] != "x-3" {
		t.Fatalf("the unauthenticated owner keeps %v, want its newest", kept)
	}
	if kept := retained(t, m, alpha...); len(kept) != 1 {
		t.Fatal("alpha's only result was evicted by another owner's churn")
	}
}

// A create beyond its agent's byte budget first forgets that agent's
// oldest results, but only when that makes room: one refused anyway
// (ErrOverBudget, naming the budget) leaves them.
func TestByteBudgetForgetsOwnResultsOnlyToMakeRoom(t *testing.T) {
	t.Parallel()
	m := newStore(t, pending.Options{MaxBytesPerAgent: 64 << 10})
	sized := func(n int) func(*pending.Question) {
		return func(q *pending.Question) { q.Owner, q.Message = "alpha", strings.Repeat("m", n) }
	}
	mustCreate(t, m, ask("r1", sized(20<<10)))
	if _, err := m.Settle(t.Context(), "r1", replied("Red")); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, m, ask("p1", sized(30<<10)))
	var over *pending.BudgetError
	if err := m.Create(t.Context(), ask("big", sized(40<<10))); !errors.As(err, &over) || over.Budget != pending.BudgetAgent || over.Agent != "alpha" || !errors.Is(err, pending.ErrOverBudget) {
		t.Fatalf("a create beyond the budget even without results: %v; want a BudgetError for alpha", err)
	}
	if kept := retained(t, m, "r1"); len(kept) != 1 {
		t.Fatal("a refused create evicted its agent's result")
	}
	mustCreate(t, m, ask("fits", sized(25<<10))) // fits once r1 is forgotten
	if kept := retained(t, m, "r1"); len(kept) != 0 {
		t.Fatal("r1 was kept beyond the budget")
	}
	if agent, _ := m.Bytes("alpha"); agent > 64<<10 {
		t.Fatalf("alpha holds %d bytes, beyond its budget", agent)
	}
}
