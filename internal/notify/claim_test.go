package notify_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/notify"
)

// sharedOutbox is a Claimer in memory: Claim hands out what the test
// offered, as if those records' leases ran out, and every call is logged.
type sharedOutbox struct {
	memoryOutbox
	lease time.Duration

	mu       sync.Mutex
	offered  map[string][]byte
	calls    []string
	claimErr error
	renewErr error
	// takenAway: records another replica took over; Renew leaves them out.
	takenAway map[string]bool
}

func newSharedOutbox(lease time.Duration) *sharedOutbox {
	return &sharedOutbox{memoryOutbox: memoryOutbox{records: map[string][]byte{}}, lease: lease, offered: map[string][]byte{}, takenAway: map[string]bool{}}
}

func (s *sharedOutbox) called(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, what)
}

func (s *sharedOutbox) Lease() time.Duration { return s.lease }

// Renew returns the keys of every record, all held by this notifier (a
// claimed one included), but those a test gave away.
func (s *sharedOutbox) Renew(context.Context) ([]string, error) {
	s.called("renew")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewErr != nil {
		return nil, s.renewErr
	}
	s.memoryOutbox.mu.Lock()
	defer s.memoryOutbox.mu.Unlock()
	var keys []string
	for k := range s.records {
		if !s.takenAway[k] {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

func (s *sharedOutbox) Release(context.Context) error { s.called("release"); return nil }

func (s *sharedOutbox) Put(ctx context.Context, key string, value []byte) error {
	s.called("put")
	return s.memoryOutbox.Put(ctx, key, value)
}

// Load claims, as a Claimer's does.
func (s *sharedOutbox) Load(ctx context.Context) (map[string][]byte, error) { return s.Claim(ctx) }

func (s *sharedOutbox) Claim(context.Context) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "claim")
	if s.claimErr != nil {
		return nil, s.claimErr
	}
	claimed := s.offered
	s.offered = map[string][]byte{}
	s.memoryOutbox.mu.Lock()
	maps.Copy(s.records, claimed)
	s.memoryOutbox.mu.Unlock()
	return claimed, nil
}

// offer makes records claimable at the next sweep.
func (s *sharedOutbox) offer(records map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.offered, records)
}

func (s *sharedOutbox) count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == what {
			n++
		}
	}
	return n
}

// countingWebhook answers 503 until it is up, then 200, counting the
// accepted deliveries by event id.
type countingWebhook struct {
	mu        sync.Mutex
	up        bool
	delivered map[string]int
}

func (w *countingWebhook) RoundTrip(r *http.Request) (*http.Response, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	code := http.StatusServiceUnavailable
	if w.up {
		code = http.StatusOK
		w.delivered[r.Header.Get(notify.HeaderEventID)]++
	}
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

func (w *countingWebhook) setUp() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.up = true
}

// A notifier on a shared outbox renews its leases every third of a lease,
// and queues what it claims: another replica's notification is delivered,
// and its own, claimed back after its lease ran out while it still queued
// it, is delivered once, not twice.
func TestClaimedNotificationsAreDeliveredOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		outbox := newSharedOutbox(lease)
		hook, n := notifyThrough(t, outbox, notify.Options{MinBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second})
		n.Asked(question("que_1"))
		synctest.Wait() // the first attempt failed: the notification is in the outbox
		own, _ := outbox.memoryOutbox.Load(context.Background())
		if len(own) != 1 {
			t.Fatalf("outbox holds %d records after a failure, want 1", len(own))
		}
		ownKey := slices.Collect(maps.Keys(own))[0]
		endpoint, ownID, _ := strings.Cut(ownKey, "/")
		foreignID := ownID + "x" // a later event, another replica's
		outbox.offer(map[string][]byte{ownKey: own[ownKey], endpoint + "/" + foreignID: own[ownKey]})

		time.Sleep(lease)
		synctest.Wait()
		if renewed := outbox.count("renew"); renewed != 3 {
			t.Fatalf("renewed %d times in a lease, want 3", renewed)
		}
		hook.setUp()
		time.Sleep(10 * time.Second) // the backoff
		synctest.Wait()
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{ownID: 1, foreignID: 1}
		if !maps.Equal(hook.delivered, want) {
			t.Fatalf("delivered %v, want %v", hook.delivered, want)
		}
		if left, _ := outbox.memoryOutbox.Load(context.Background()); len(left) != 0 {
			t.Fatalf("outbox holds %d delivered notifications", len(left))
		}
	})
}

// Close writes what it did not deliver, then releases it to the other
// replicas, once; a notifier then neither renews nor claims.
func TestCloseReleasesAfterKeeping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outbox := newSharedOutbox(time.Minute)
		_, n := notifyThrough(t, outbox, notify.Options{MinBackoff: time.Hour, Grace: time.Second})
		n.Asked(question("que_1"))
		synctest.Wait()
		n.Asked(question("que_2")) // waits behind the failing first, not written yet
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		outbox.mu.Lock()
		calls := slices.Clone(outbox.calls)
		outbox.mu.Unlock()
		if want := []string{"claim", "put", "put", "release"}; !slices.Equal(calls, want) {
			t.Fatalf("outbox calls %v, want %v", calls, want)
		}
		if kept, _ := outbox.memoryOutbox.Load(context.Background()); len(kept) != 2 {
			t.Fatalf("outbox holds %d notifications, want 2", len(kept))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if after := outbox.count("renew") + outbox.count("claim"); after != 1 {
			t.Fatalf("%d renewals and claims after Close", after-1) // the one claim is the start's
		}
	})
}

// A shared outbox that cannot be reached is logged once, not every sweep,
// and its recovery once.
func TestSweepFailureLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outbox := newSharedOutbox(3 * time.Second)
		log, logs := observed()
		n := start(t, notify.Options{URLs: []string{"https://hooks.example/x"}, Outbox: outbox, Logger: log,
			Transport: &countingWebhook{delivered: map[string]int{}}})
		outbox.mu.Lock()
		outbox.claimErr = errors.New("database down")
		outbox.mu.Unlock()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if failures := logs.FilterMessageSnippet("could not renew or claim").Len(); failures != 1 {
			t.Fatalf("%d failures logged over several sweeps, want 1", failures)
		}
		outbox.mu.Lock()
		outbox.claimErr = nil
		outbox.mu.Unlock()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if recovered := logs.FilterMessageSnippet("reachable again").Len(); recovered != 1 {
			t.Fatalf("%d recoveries logged, want 1", recovered)
		}
		_ = n.Close(context.Background())
	})
}

// A notifier that cannot renew its leases (cut off from the shared outbox,
// not dead) stops sending what it stored once they may have run out, even
// with its webhook back; when a renewal succeeds again, it sends what it
// still holds and drops, undeleted, what another replica took meanwhile.
func TestLapsedLeasesStopDeliveries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 3 * time.Second
		outbox := newSharedOutbox(lease)
		hook, n := notifyThrough(t, outbox, notify.Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
		defer n.Close(context.Background())
		n.Asked(question("que_1"))
		n.Asked(question("que_2"))
		time.Sleep(time.Second) // failed attempts: both are in the outbox
		synctest.Wait()
		stored, _ := outbox.memoryOutbox.Load(context.Background())
		if len(stored) != 2 {
			t.Fatalf("outbox holds %d records after failures, want 2", len(stored))
		}
		outbox.mu.Lock()
		outbox.renewErr = errors.New("the database is unreachable")
		outbox.mu.Unlock()

		time.Sleep(2 * lease) // no renewal since: the leases may be another's
		synctest.Wait()
		hook.setUp()
		time.Sleep(lease)
		synctest.Wait()
		if len(hook.delivered) != 0 {
			t.Fatalf("delivered %v with leases that may have run out", hook.delivered)
		}

		// Another replica took que_2's record; que_1's is still this one's.
		var taken string
		for k := range stored {
			if strings.Contains(string(stored[k]), "que_2") {
				taken = k
			}
		}
		if taken == "" {
			t.Fatalf("no record of que_2 among %v", slices.Collect(maps.Keys(stored)))
		}
		outbox.mu.Lock()
		outbox.renewErr = nil
		outbox.takenAway[taken] = true
		outbox.mu.Unlock()
		time.Sleep(lease)
		synctest.Wait()
		if len(hook.delivered) != 1 {
			t.Fatalf("delivered %v after the renewal; want que_1's notification alone", hook.delivered)
		}
		left, _ := outbox.memoryOutbox.Load(context.Background())
		if _, ok := left[taken]; !ok || len(left) != 1 {
			t.Fatalf("outbox holds %v; want the other replica's record alone, undeleted", slices.Collect(maps.Keys(left)))
		}
	})
}

// notifyThrough starts a notifier of one webhook, answered by a fresh
// countingWebhook, whose undelivered notifications go to outbox; opts sets
// the rest.
func notifyThrough(t *testing.T, outbox notify.Outbox, opts notify.Options) (*countingWebhook, *notify.Notifier) {
	t.Helper()
	hook := &countingWebhook{delivered: map[string]int{}}
	opts.URLs, opts.Transport, opts.Outbox = []string{"https://hooks.example/x"}, hook, outbox
	n, err := notify.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return hook, n
}
