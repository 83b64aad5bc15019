package pending_test

// Filter.Ended: List and Count also see ended questions while their results
// are retained, and forget them with the results (expiry and eviction).

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

func listedIDs(t *testing.T, m *pending.Store, f pending.Filter) string {
	t.Helper()
	list, err := m.List(t.Context(), f)
	if err != nil {
		t.Fatalf("list %+v: %v", f, err)
	}
	ids := make([]string, len(list))
	for i, q := range list {
		ids[i] = q.ID
		if (q.Ended != nil) != (q.ID != "que_pending" && q.ID != "que_other") {
			t.Errorf("%s: Ended = %+v", q.ID, q.Ended)
		}
	}
	n, err := m.Count(t.Context(), f)
	if err != nil || n != len(list) {
		t.Errorf("count %+v = %d, %v; list has %d", f, n, err, len(list))
	}
	return fmt.Sprint(ids)
}

func TestListEndedFollowsRetention(t *testing.T) {
	t.Parallel()
	for kind, build := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, _ := build(t, pending.Options{Retention: time.Hour, MaxRetained: 3})
				mustCreate(t, m, ask("que_pending"))
				mustCreate(t, m, ask("que_other", func(q *pending.Question) { q.SessionID = "ses_2" }))
				mustCreate(t, m, ask("que_b"))
				mustCreate(t, m, ask("que_a"))
				endAll(t, m, "que_1")
				time.Sleep(time.Minute)
				for _, id := range []string{"que_a", "que_b"} { // ended in the other order than created
					if _, err := m.Settle(t.Context(), id, replied(id)); err != nil {
						t.Fatal(err)
					}
				}
				if got := listedIDs(t, m, pending.Filter{}); got != "[que_pending que_other]" {
					t.Errorf("without Ended: %s", got)
				}
				if got := listedIDs(t, m, pending.Filter{Ended: true}); got != "[que_pending que_other que_1 que_a que_b]" {
					t.Errorf("with Ended: %s, want pending first, then in ending order", got)
				}
				if got := listedIDs(t, m, pending.Filter{Ended: true, SessionID: "ses_1"}); got != "[que_pending que_1 que_a que_b]" {
					t.Errorf("session filter: %s", got)
				}
				time.Sleep(time.Hour - time.Minute) // que_1's retention runs out, not the others'
				if got := listedIDs(t, m, pending.Filter{Ended: true}); got != "[que_pending que_other que_a que_b]" {
					t.Errorf("after que_1 expired: %s", got)
				}
				endAll(t, m, "que_c", "que_d") // four results, MaxRetained 3: que_a, the oldest, goes
				if got := listedIDs(t, m, pending.Filter{Ended: true}); got != "[que_pending que_other que_b que_c que_d]" {
					t.Errorf("after eviction: %s", got)
				}
			})
		})
	}
}
