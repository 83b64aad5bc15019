package pending_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/questiond/questiond/internal/pending"
)

// List by session answers from the session's own index; it must say exactly
// what filtering the whole store's list says, in the same order, through
// creations, endings in any order, evictions and (durable kinds) a restart.
func TestListBySessionIsTheFilteredList(t *testing.T) {
	t.Parallel()
	for kind, build := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			m, j := build(t, pending.Options{MaxRetained: 7})
			rng := rand.New(rand.NewPCG(1, uint64(len(kind))))
			sessions := []string{"ses_a", "ses_b", "ses_c"}
			dirs := []string{"", "/x", "/y"}
			var live []string
			check := func(step string) {
				t.Helper()
				for _, ended := range []bool{false, true} {
					for _, dir := range dirs {
						all, err := m.List(t.Context(), pending.Filter{Ended: ended, Directory: dir})
						if err != nil {
							t.Fatal(err)
						}
						for _, s := range sessions {
							var want []string
							for _, q := range all {
								if q.SessionID == s {
									want = append(want, q.ID)
								}
							}
							got, err := m.List(t.Context(), pending.Filter{Ended: ended, Directory: dir, SessionID: s})
							if err != nil {
								t.Fatal(err)
							}
							ids := make([]string, len(got))
							for i, q := range got {
								ids[i] = q.ID
							}
							if !slices.Equal(ids, want) {
								t.Fatalf("%s: session %s ended=%v dir=%q: %v, want %v", step, s, ended, dir, ids, want)
							}
						}
					}
				}
			}
			for i := range 60 {
				if len(live) == 0 || rng.IntN(3) > 0 {
					id := fmt.Sprintf("que_%03d", i)
					mustCreate(t, m, ask(id, func(q *pending.Question) {
						q.SessionID = sessions[rng.IntN(len(sessions))]
						q.Directory = dirs[rng.IntN(len(dirs))]
					}))
					live = append(live, id)
				} else {
					k := rng.IntN(len(live))
					if _, err := m.Settle(t.Context(), live[k], replied("x")); err != nil {
						t.Fatal(err)
					}
					live = slices.Delete(live, k, k+1)
				}
				check(fmt.Sprintf("step %d", i))
			}
			if j != nil {
				if err := m.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
				m = openStore(t, j, pending.Options{MaxRetained: 7})
				check("after a restart")
			}
		})
	}
}
