package replicas

import (
	"net/http"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/pgtest"
)

// --max-pending holds for the cluster: creations racing on three replicas
// take exactly the places there are, and the rest get 429.
func TestMaxPendingIsClusterWide(t *testing.T) {
	url := pgtest.Database(t)
	env := []string{"QUESTIOND_DATABASE_URL=" + url}
	var replicas []*replica
	for _, name := range []string{"A", "B", "C"} {
		replicas = append(replicas, startProcess(t, name, env, "--store", "postgres", "--max-pending", "4"))
	}
	const attempts = 24
	codes := make([]int, attempts)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range attempts {
		wg.Go(func() {
			<-start
			codes[i], _ = replicas[i%3].call(t, http.MethodPost, "/elicitations", form)
		})
	}
	close(start)
	wg.Wait()
	created, refused := 0, 0
	for _, code := range codes {
		switch code {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Errorf("unexpected status %d", code)
		}
	}
	if created != 4 || refused != attempts-4 {
		t.Fatalf("%d created, %d refused (%v); want 4 and %d", created, refused, codes, attempts-4)
	}
}
