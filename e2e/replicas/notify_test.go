package replicas

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testkit"
)

// hookServer is a webhook that answers 503 until it is opened, then 200,
// counting the deliveries it accepted by event id.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	open     bool
	accepted map[string]int
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{accepted: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.open {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.accepted[r.Header.Get("X-Questiond-Event-Id")]++
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) setOpen() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open = true
}

// tally is how many events the webhook accepted, and the most times one.
func (h *hookServer) tally() (events, most int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.accepted {
		most = max(most, n)
	}
	return len(h.accepted), most
}

// outboxRows counts the shared outbox's records matching cond.
func outboxRows(t *testing.T, url, cond string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM notify_outbox WHERE "+cond).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// within fails unless ok holds within 20 s.
func within(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, what, ok)
}

// Webhook notifications replica A could not deliver are held by A: a
// replica B that starts meanwhile leaves them alone. When A is killed
// (SIGKILL: nothing released), B delivers each of them once, about a
// --notify-lease after A's last renewal.
func TestKilledReplicasWebhookNotificationsAreDeliveredOnce(t *testing.T) {
	url := pgtest.Database(t)
	hook := newHookServer(t)
	env := []string{"QUESTIOND_DATABASE_URL=" + url, "QUESTIOND_NOTIFY_URLS=" + hook.URL}
	const lease, count = "1s", 5
	a := startProcess(t, "A", env, "--store", "postgres", "--notify-lease", lease)
	for range count {
		create(t, a)
	}
	within(t, "A keeps its undelivered notifications in the database", func() bool {
		return outboxRows(t, url, "lease_until > now()") == count
	})
	b := startProcess(t, "B", env, "--store", "postgres", "--notify-lease", lease)
	if held, owners := outboxRows(t, url, "lease_until > now()"), outboxRows(t, url, "owner IN (SELECT max(owner) FROM notify_outbox)"); held != count || owners != count {
		t.Fatalf("after B started: %d of %d notifications held, %d by one replica; want all, by A", held, count, owners)
	}

	if err := a.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.proc.Exited()
	killed := time.Now()
	hook.setOpen()
	within(t, "B delivers A's notifications", func() bool { events, _ := hook.tally(); return events == count })
	t.Logf("A's %d notifications delivered by B %v after A was killed (lease %s)", count, time.Since(killed).Round(10*time.Millisecond), lease)
	within(t, "the outbox is emptied", func() bool { return outboxRows(t, url, "true") == 0 })
	if err := b.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-b.proc.Exited()
	if events, most := hook.tally(); events != count || most != 1 {
		t.Fatalf("the webhook accepted %d events, one %d times; want %d, each once", events, most, count)
	}
}
