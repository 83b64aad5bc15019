package notify_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/notify"
)

// failingTransport answers every request 503 at once and records when.
type failingTransport struct {
	mu       sync.Mutex
	attempts []time.Time
}

func (f *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.attempts = append(f.attempts, time.Now())
	f.mu.Unlock()
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// Retries wait exponentially longer, each wait between half and all of its
// step, and stop once the notification is MaxAge old.
func TestBackoffDoublesWithJitterUntilMaxAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &failingTransport{}
		log, logs := observed()
		n, err := notify.New(context.Background(), notify.Options{URLs: []string{"https://hooks.example/x"}, Transport: ft,
			MinBackoff: time.Second, MaxBackoff: 8 * time.Second, MaxAge: time.Minute, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n.Asked(question("que_1"))
		time.Sleep(2 * time.Minute) // fake time: every retry there is to make
		synctest.Wait()
		ft.mu.Lock()
		attempts := ft.attempts
		ft.mu.Unlock()
		for i := 1; i < len(attempts); i++ {
			step := min(time.Second<<(i-1), 8*time.Second)
			gap := attempts[i].Sub(attempts[i-1])
			if gap < step/2 || gap > step {
				t.Errorf("wait %d is %s, want %s..%s", i, gap, step/2, step)
			}
		}
		if last := attempts[len(attempts)-1].Sub(start); last > time.Minute {
			t.Errorf("retried %s after the notification was made, past its max age", last)
		}
		if len(attempts) < 8 {
			t.Errorf("%d attempts in a minute", len(attempts))
		}
		if logs.FilterMessageSnippet("giving up").Len() != 1 || logs.FilterMessageSnippet("webhook failing").Len() != 1 {
			t.Errorf("logs: %v", logs.All())
		}
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Asked and Ended return at once however many notifications wait behind a
// receiver that never answers.
func TestNotifyingNeverWaitsForAReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})
		n, err := notify.New(context.Background(), notify.Options{URLs: []string{"https://a.example/", "https://b.example/"},
			Transport: hang, QueueLength: 10})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range 100 {
			q := question("que_1")
			n.Asked(q)
			n.Ended(replied(q))
		}
		if spent := time.Since(start); spent != 0 {
			t.Errorf("notifying took %s of fake time", spent)
		}
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
