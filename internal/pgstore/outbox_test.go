package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/pgstore"
	"github.com/questiond/questiond/internal/testkit"
)

// webhook counts the deliveries it got by event id.
type webhook struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int
}

func newWebhook(t *testing.T) *webhook {
	t.Helper()
	w := &webhook{counts: map[string]int{}}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.counts[r.Header.Get(notify.HeaderEventID)]++
		w.mu.Unlock()
	}))
	t.Cleanup(w.Close)
	return w
}

// distinct is how many events it got, and the highest count of one.
func (w *webhook) distinct() (events, most int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.counts {
		most = max(most, n)
	}
	return len(w.counts), most
}

// link is a replica's way to the webhook, which a test cuts and mends.
type link struct {
	cut  atomic.Bool
	next http.RoundTripper
}

func (l *link) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.cut.Load() {
		return nil, errors.New("the test cut this replica off the webhook")
	}
	return l.next.RoundTrip(r)
}

// severable is a replica's outbox, which a test can kill: from then on
// every call fails, as it would from a process that is gone, and nothing
// renews or releases its leases. It counts the claims it made.
type severable struct {
	*pgstore.Outbox
	dead   atomic.Bool
	claims atomic.Int64
}

var errDead = errors.New("the test killed this replica")

func (s *severable) Load(ctx context.Context) (map[string][]byte, error) { return s.Claim(ctx) }

func (s *severable) Claim(ctx context.Context) (map[string][]byte, error) {
	if s.dead.Load() {
		return nil, errDead
	}
	defer s.claims.Add(1)
	return s.Outbox.Claim(ctx)
}

func (s *severable) Renew(ctx context.Context) ([]string, error) {
	if s.dead.Load() {
		return nil, errDead
	}
	return s.Outbox.Renew(ctx)
}

func (s *severable) Release(ctx context.Context) error {
	if s.dead.Load() {
		return errDead
	}
	return s.Outbox.Release(ctx)
}

func (s *severable) Put(ctx context.Context, key string, value []byte) error {
	if s.dead.Load() {
		return errDead
	}
	return s.Outbox.Put(ctx, key, value)
}

func (s *severable) Delete(ctx context.Context, key string) error {
	if s.dead.Load() {
		return errDead
	}
	return s.Outbox.Delete(ctx, key)
}

// notifying is one replica's notifier on the shared outbox.
type notifying struct {
	db     *pgstore.DB
	outbox *severable
	link   *link
	n      *notify.Notifier
}

// startNotifying starts a replica's notifier for hook with this lease; its
// link to the webhook starts cut if cut is set. It is closed when the test
// ends, unless the test closed it.
func startNotifying(t *testing.T, url string, hook *webhook, lease time.Duration, cut bool) *notifying {
	t.Helper()
	db, err := pgstore.Open(context.Background(), url, pgstore.Options{OutboxLease: lease})
	if err != nil {
		t.Fatal(err)
	}
	r := &notifying{db: db, outbox: &severable{Outbox: db.Outbox()}, link: &link{next: http.DefaultTransport.(*http.Transport).Clone()}}
	r.link.cut.Store(cut)
	r.n, err = notify.New(context.Background(), notify.Options{URLs: []string{hook.URL}, Outbox: r.outbox, Transport: r.link,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Grace: 10 * time.Millisecond})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.n.Close(context.Background()) // fails for a killed replica
		db.Close()
	})
	return r
}

// ask has r notify of count questions.
func (r *notifying) ask(count int) {
	for i := range count {
		r.n.Asked(question(fmt.Sprintf("que_%d", i)))
	}
}

// outboxCount counts the outbox's records that match cond.
func outboxCount(t *testing.T, db *pgstore.DB, cond string) int {
	t.Helper()
	return rowCount(t, db, "notify_outbox", cond)
}

// rowCount counts the rows of table that match cond.
func rowCount(t *testing.T, db *pgstore.DB, table, cond string) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE "+cond).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually fails unless ok holds within 15 s.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testkit.Eventually(t, 15*time.Second, what, ok)
}

// deliveredOnce waits until hook got want events and the outbox is empty,
// then closes the replicas and checks that each event came once.
func deliveredOnce(t *testing.T, hook *webhook, db *pgstore.DB, want int, replicas ...*notifying) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d events delivered and the outbox empty", want), func() bool {
		events, _ := hook.distinct()
		return events == want && outboxCount(t, db, "true") == 0
	})
	for _, r := range replicas {
		_ = r.n.Close(context.Background())
	}
	if events, most := hook.distinct(); events != want || most != 1 {
		t.Fatalf("the webhook got %d events, one of them %d times; want %d, each once", events, most, want)
	}
}

// A replica that dies holding undelivered notifications (its leases no
// longer renewed, nothing released) leaves them to another, already
// running, which delivers each once within about a lease.
func TestOutboxDeadReplicasNotificationsAreTakenOver(t *testing.T) {
	url := database(t)
	hook := newWebhook(t)
	const lease, count = time.Second, 20
	dying := startNotifying(t, url, hook, lease, true)
	survivor := startNotifying(t, url, hook, lease, false)
	dying.ask(count)
	eventually(t, "the dying replica holds its notifications", func() bool {
		return outboxCount(t, dying.db, "lease_until > now()") == count
	})
	dying.outbox.dead.Store(true)
	died := time.Now()
	eventually(t, "the survivor delivers them", func() bool { events, _ := hook.distinct(); return events == count })
	t.Logf("taken over and delivered %v after the death, with a lease of %v", time.Since(died).Round(time.Millisecond), lease)
	deliveredOnce(t, hook, survivor.db, count, survivor)
}

// A replica cut off from the database (alive, and reaching its webhook
// again) does not send the notifications it stored once its leases may
// have run out: another replica takes them over and delivers them, and
// when the first reaches the database again its renewal no longer returns
// them and it drops them. Each is delivered once.
func TestOutboxCutOffReplicaLeavesItsNotificationsToTheTaker(t *testing.T) {
	url := database(t)
	hook := newWebhook(t)
	const lease, count = 600 * time.Millisecond, 5
	cutOff := startNotifying(t, url, hook, lease, true)
	taker := startNotifying(t, url, hook, lease, false)
	cutOff.ask(count)
	eventually(t, "the replica holds its notifications", func() bool {
		return outboxCount(t, cutOff.db, "lease_until > now()") == count
	})
	cutOff.outbox.dead.Store(true)
	time.Sleep(lease + lease/6) // its leases may have run out
	cutOff.link.cut.Store(false)
	eventually(t, "the taker delivers them", func() bool { events, _ := hook.distinct(); return events == count })
	before := cutOff.outbox.claims.Load()
	cutOff.outbox.dead.Store(false)
	eventually(t, "the replica sweeps twice again", func() bool { return cutOff.outbox.claims.Load() >= before+2 })
	deliveredOnce(t, hook, taker.db, count, cutOff, taker)
}

// A replica that starts, and sweeps for longer than a lease, leaves alone
// the notifications a live replica holds and keeps retrying; that one
// delivers them once its webhook is back, each once.
func TestOutboxLiveReplicasNotificationsAreLeftToIt(t *testing.T) {
	url := database(t)
	hook := newWebhook(t)
	const lease, count = 600 * time.Millisecond, 10
	holder := startNotifying(t, url, hook, lease, true)
	holder.ask(count)
	eventually(t, "the holder keeps its notifications", func() bool {
		return outboxCount(t, holder.db, "lease_until > now()") == count
	})
	newcomer := startNotifying(t, url, hook, lease, false)
	// Four sweeps are more than a lease: the holder's renewals kept it.
	eventually(t, "the newcomer sweeps four times", func() bool { return newcomer.outbox.claims.Load() >= 5 })
	if events, _ := hook.distinct(); events != 0 {
		t.Fatalf("the newcomer delivered %d notifications a live replica holds", events)
	}
	holder.link.cut.Store(false)
	deliveredOnce(t, hook, holder.db, count, holder, newcomer)
}

// A replica that stops writes what it did not deliver and releases it: a
// running replica's next sweep takes it, long before the lease would have
// run out.
func TestOutboxStoppedReplicasNotificationsAreTakenOverAtOnce(t *testing.T) {
	url := database(t)
	hook := newWebhook(t)
	const count = 10
	stopping := startNotifying(t, url, hook, time.Hour, true)
	survivor := startNotifying(t, url, hook, 300*time.Millisecond, false)
	stopping.ask(count)
	if err := stopping.n.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	// The survivor's claims hold for 300 ms; the stopped replica's for an hour.
	if held := outboxCount(t, survivor.db, "lease_until > now() + interval '1 minute'"); held > 0 {
		t.Fatalf("the stopped replica still holds %d notifications", held)
	}
	deliveredOnce(t, hook, survivor.db, count, survivor)
}

// Replicas sweeping at once, on separate pools, never both claim a record:
// every record is claimed exactly once, by the replica the database says
// holds it.
func TestOutboxConcurrentClaimsNeverOverlap(t *testing.T) {
	url := database(t)
	ctx := context.Background()
	setup := open(t, url)
	const records = 3000
	if _, err := setup.Pool().Exec(ctx, "INSERT INTO notify_outbox (key, value) SELECT 'k/' || i, '\\x00' FROM generate_series(1, $1) i", records); err != nil {
		t.Fatal(err)
	}
	type claimer struct {
		outbox *pgstore.Outbox
		got    sync.Map // key → claims
	}
	claimers := []*claimer{{outbox: open(t, url).Outbox()}, {outbox: open(t, url).Outbox()}}
	var wg sync.WaitGroup
	errs := make(chan error, 8) // one per goroutine
	for _, c := range claimers {
		for range 4 {
			wg.Go(func() {
				for {
					var left int
					err := setup.Pool().QueryRow(ctx, "SELECT count(*) FROM notify_outbox WHERE lease_until < now()").Scan(&left)
					if err != nil || left == 0 {
						errs <- err
						return
					}
					claimed, err := c.outbox.Claim(ctx)
					if err != nil {
						errs <- err
						return
					}
					for key := range claimed {
						n, _ := c.got.LoadOrStore(key, new(atomic.Int64))
						n.(*atomic.Int64).Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i, c := range claimers {
		mine := 0
		c.got.Range(func(key, n any) bool {
			mine++
			if n.(*atomic.Int64).Load() != 1 {
				t.Errorf("claimer %d claimed %s %d times", i, key, n.(*atomic.Int64).Load())
			}
			for j, other := range claimers {
				if _, both := other.got.Load(key); both && j != i {
					t.Errorf("%s claimed by claimers %d and %d", key, i, j)
				}
			}
			return true
		})
		// Each claimer holds what it claimed: releasing frees exactly that.
		before := outboxCount(t, setup, "owner = ''")
		if err := c.outbox.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if freed := outboxCount(t, setup, "owner = ''") - before; freed != mine {
			t.Errorf("claimer %d claimed %d records but released %d", i, mine, freed)
		}
		total += mine
		t.Logf("claimer %d claimed %d records", i, mine)
	}
	if total != records {
		t.Fatalf("%d records claimed; want %d", total, records)
	}
}

// A record is held by the replica that wrote it: another cannot claim or
// overwrite it until the lease runs out or the holder releases it; any
// replica deletes it.
func TestOutboxLeases(t *testing.T) {
	url := database(t)
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	writer := pgstoreOutbox(t, url, lease)
	other := pgstoreOutbox(t, url, lease)
	if err := writer.Put(ctx, "k/1", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if claimed, err := other.Load(ctx); err != nil || len(claimed) != 0 {
		t.Fatalf("another replica loaded %v (%v) of a record held", claimed, err)
	}
	if err := other.Put(ctx, "k/1", []byte("second")); err != nil {
		t.Fatal(err)
	}
	var claimed map[string][]byte
	eventually(t, "the lease runs out and another replica claims the record", func() bool {
		var err error
		claimed, err = other.Claim(ctx)
		return err == nil && len(claimed) == 1
	})
	if got := string(claimed["k/1"]); got != "first" {
		t.Fatalf("claimed %q; a Put of a record another replica held replaced it", got)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if claimed, err := writer.Claim(ctx); err != nil || len(claimed) != 1 {
		t.Fatalf("after a release, claimed %v (%v); want the record", claimed, err)
	}
	// A replica that delivered a record after losing it deletes it all the
	// same: delivered is done, whoever holds it now.
	if err := other.Delete(ctx, "k/1"); err != nil {
		t.Fatal(err)
	}
	if left := outboxCount(t, open(t, url), "true"); left != 0 {
		t.Fatalf("%d records left after the delete of one another replica held", left)
	}
}

// Records written before leases existed (schema version 5) are claimable
// after the migration, once.
func TestOutboxRecordsFromBeforeLeasesAreClaimed(t *testing.T) {
	url := database(t)
	ctx := context.Background()
	s := open(t, url)
	_, err := s.Pool().Exec(ctx, `
DROP INDEX notify_outbox_owner; DROP INDEX notify_outbox_lease_until;
ALTER TABLE notify_outbox DROP COLUMN owner, DROP COLUMN lease_until;
DROP FUNCTION questiond_apply(text[], text[], text[], text[], timestamptz[], timestamptz[], bigint, bigint, bigint[], bigint, bigint, timestamptz);
DROP FUNCTION questiond_apply(text[], text[], text[], text[], timestamptz[], timestamptz[], bigint, bigint);
DROP TRIGGER questions_deleted ON questions;
DROP FUNCTION questiond_deleted, questiond_forget, questiond_forget_oldest, questiond_weigh;
DROP TABLE held_bytes;
ALTER TABLE questions DROP COLUMN weight;
ALTER TABLE pending_owners DROP COLUMN bytes;
DROP TABLE gone_keys;
UPDATE questiond_schema SET version = 5;
INSERT INTO notify_outbox (key, value) VALUES ('k/old', 'kept by version 5')`)
	if err != nil {
		t.Fatal(err)
	}
	first, second := open(t, url).Outbox(), open(t, url).Outbox()
	if claimed, err := first.Load(ctx); err != nil || string(claimed["k/old"]) != "kept by version 5" {
		t.Fatalf("after the migration, loaded %q (%v)", claimed, err)
	}
	if claimed, err := second.Load(ctx); err != nil || len(claimed) != 0 {
		t.Fatalf("a second replica loaded %q (%v) of a record the first holds", claimed, err)
	}
}

func pgstoreOutbox(t *testing.T, url string, lease time.Duration) *pgstore.Outbox {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{OutboxLease: lease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Outbox()
}
