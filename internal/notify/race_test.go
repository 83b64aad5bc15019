package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/notify"
)

// Notifications queued from many goroutines while a webhook fails every
// other attempt, then a Close: each is delivered or kept in the outbox,
// none is lost, and at most the one in flight when Close cut it off is both.
func TestConcurrentNotifyAndCloseLoseNothing(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	delivered := map[string]int{}
	flaky := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		var b notify.Body
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		defer mu.Unlock()
		attempts++
		code := http.StatusOK
		if attempts%2 == 1 {
			code = http.StatusBadGateway
		} else {
			delivered[b.Question.ID]++
		}
		return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	outbox := &memoryOutbox{records: map[string][]byte{}}
	n, err := notify.New(context.Background(), notify.Options{URLs: []string{"https://hooks.example/x"}, Transport: flaky,
		Outbox: outbox, MinBackoff: time.Microsecond, MaxBackoff: 50 * time.Microsecond, Grace: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				n.Asked(question(fmt.Sprintf("que_%d_%d", w, i)))
			}
		})
	}
	wg.Wait()
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	kept := map[string]int{}
	for _, value := range outbox.records {
		var r struct{ Body notify.Body }
		if err := json.Unmarshal(value, &r); err != nil {
			t.Fatal(err)
		}
		kept[r.Body.Question.ID]++
	}
	mu.Lock()
	defer mu.Unlock()
	both := 0
	for w := range writers {
		for i := range each {
			id := fmt.Sprintf("que_%d_%d", w, i)
			switch d, k := delivered[id], kept[id]; {
			case d+k == 0:
				t.Errorf("%s was lost", id)
			case d > 1 || k > 1:
				t.Errorf("%s delivered %d times, kept %d times", id, d, k)
			case d == 1 && k == 1:
				both++
			}
		}
	}
	if both > 1 {
		t.Errorf("%d notifications both delivered and kept", both)
	}
	t.Logf("%d delivered, %d kept, %d attempts", len(delivered), len(kept), attempts)
}
