package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/pgtest"
)

// Two PostgreSQL replicas list the same pending questions in the same
// order, creation (id) order, however the creations interleaved: OpenCode
// clients show them first-in first-out (issue 22, item 12).
func TestReplicasListQuestionsInCreationOrder(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	replicas := []*harness{
		newHarnessWith(t, tuning{database: url}, zaptest.NewLogger(t)),
		newHarnessWith(t, tuning{database: url}, zaptest.NewLogger(t)),
	}
	const each = 30
	var wg sync.WaitGroup
	for _, h := range replicas {
		for range each {
			wg.Go(func() {
				res, err := h.request(http.MethodPost, "/elicitations", seedForm())
				if err != nil || res.Status != http.StatusCreated {
					t.Errorf("create: %v %d %s", err, res.Status, res.Body)
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	lists := make([][]string, len(replicas))
	for i, h := range replicas {
		deadline := time.Now().Add(10 * time.Second)
		for {
			lists[i] = listedIDs(t, h)
			if len(lists[i]) == 2*each || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(lists[i]) != 2*each {
			t.Fatalf("replica %d lists %d questions; want %d", i, len(lists[i]), 2*each)
		}
		if !slices.IsSorted(lists[i]) {
			t.Errorf("replica %d does not list by creation (id) order: %s", i, firstInversion(lists[i]))
		}
	}
	for k := range lists[0] {
		if lists[0][k] != lists[1][k] {
			t.Errorf("the replicas' lists differ first at position %d: %s and %s", k, lists[0][k], lists[1][k])
			break
		}
	}
}

// firstInversion names the first id listed before a smaller one.
func firstInversion(ids []string) string {
	for k := 1; k < len(ids); k++ {
		if ids[k] < ids[k-1] {
			return fmt.Sprintf("%s at %d after %s", ids[k], k, ids[k-1])
		}
	}
	return "none"
}

// listedIDs is GET /question as ids, in the order listed.
func listedIDs(t *testing.T, h *harness) []string {
	t.Helper()
	res := h.do(http.MethodGet, "/question", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET /question: %d %s", res.Status, res.Body)
	}
	var items []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res.Body, &items); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(items))
	for i, q := range items {
		ids[i] = q.ID
	}
	return ids
}
