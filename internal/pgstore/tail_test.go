package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
	"github.com/questiond/questiond/internal/pgtest"
)

// Writers on two pools create and end questions concurrently while a
// tailer follows: it sees every change exactly once, in the log's order,
// each question's asked before its ended. Its connection is killed
// midway (pg_terminate_backend) and it catches up from where it was.
func TestTailIsGapFreeUnderConcurrentWriters(t *testing.T) {
	url := database(t)
	core, logs := observer.New(zap.InfoLevel)
	a, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := open(t, url)
	var changes changeLog
	tail := a.Tail(0, changes.record, pgstore.TailOptions{PollInterval: 100 * time.Millisecond, Batch: 7})
	defer tail.Stop()

	ctx := context.Background()
	const writers, each = 6, 25
	var wg sync.WaitGroup
	for w := range writers {
		j := a.Questions()
		if w%2 == 1 {
			j = b.Questions()
		}
		wg.Go(func() {
			for i := range each {
				q := question(fmt.Sprintf("w%d-%d", w, i))
				if err := j.Put(ctx, q); err != nil {
					t.Errorf("create: %v", err)
					return
				}
				if i%2 == 0 {
					o := reply("x")
					o.At = time.Now()
					q.Ended = &o
					if err := j.Put(ctx, q); err != nil {
						t.Errorf("end: %v", err)
						return
					}
				}
				if w == 0 && i == each/2 {
					// Cut the tailer's connection: the only one LISTENing.
					if _, err := b.Pool().Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", pgstore.TailerApplicationName); err != nil {
						t.Errorf("terminate: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	total := int64(writers*each + writers*((each+1)/2))
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := tail.WaitFor(waitCtx, nextXid(t, b)); err != nil {
		t.Fatalf("tailer reached %d: %v", tail.Last(), err)
	}
	// The tailer may read everything before its backend dies (the
	// termination is a signal), and it logs its recovery after the catch-up
	// that moved its position: both logs may come after WaitFor returns.
	for _, msg := range []string{"change log unreachable; reconnecting with backoff", "change log reachable again; caught up"} {
		deadline := time.Now().Add(10 * time.Second)
		for logs.FilterMessage(msg).Len() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := logs.FilterMessage(msg).Len(); n != 1 {
			t.Errorf("%q logged %d times; want once", msg, n)
		}
	}
	seen := changes.all()
	state := map[string]string{}
	for i, c := range seen {
		if i > 0 && (c.Xid < seen[i-1].Xid || c.Xid == seen[i-1].Xid && c.Seq <= seen[i-1].Seq) {
			t.Fatalf("change #%d (%d, %d) after (%d, %d): out of order or a repeat", i+1, c.Xid, c.Seq, seen[i-1].Xid, seen[i-1].Seq)
		}
		id := c.Question.ID
		switch {
		case c.Kind == pgstore.KindAsked && state[id] == "" && c.Question.Ended == nil:
			state[id] = "asked"
		case c.Kind == pgstore.KindEnded && state[id] == "asked" && c.Question.Ended != nil:
			state[id] = "ended"
		default:
			t.Fatalf("change %d (%s of %s) after %q", c.Seq, c.Kind, id, state[id])
		}
	}
	if len(seen) != int(total) {
		t.Fatalf("saw %d changes; want %d", len(seen), total)
	}
}

// A writer that holds its transaction open after logging a change does
// not let the tailer pass it: a change that commits later, in a
// transaction that began after it, waits for it, and both are handed over
// once the first commits, the first first. A tailer that trusted the
// numbers alone would hand over the second and then skip the first.
func TestTailWaitsForAnOpenWriter(t *testing.T) {
	url := database(t)
	a := open(t, url)
	var changes changeLog
	tail := a.Tail(0, changes.record, pgstore.TailOptions{PollInterval: 20 * time.Millisecond})
	defer tail.Stop()
	ctx := context.Background()

	held, err := a.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Rollback(ctx) }()
	first := question("held")
	if _, err := held.Exec(ctx, "SELECT questiond_ask($1, $2, '', '', now(), 0, 0)", first.ID, `{"id":"held","sessionID":"ses_1","message":"m","schema":{"type":"object"},"createdAt":"2026-01-01T00:00:00Z"}`); err != nil {
		t.Fatal(err)
	}
	if err := a.Questions().Put(ctx, question("later")); err != nil {
		t.Fatal(err)
	}
	// The tailer reads on: past the later change's transaction, were it
	// not for the open one.
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = tail.WaitFor(waitCtx, nextXid(t, a))
	cancel()
	if err == nil {
		t.Fatal("the tailer's position passed a transaction still open")
	}
	if seen := changes.all(); len(seen) != 0 {
		t.Fatalf("handed over %d changes while an earlier writer was open", len(seen))
	}
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tail.WaitFor(waitCtx, nextXid(t, a)); err != nil {
		t.Fatal(err)
	}
	seen := changes.all()
	if len(seen) != 2 || seen[0].Question == nil || seen[0].Question.ID != "held" || seen[1].Question == nil || seen[1].Question.ID != "later" {
		t.Fatalf("handed over %v; want held, then later", seen)
	}
}

// nextXid is the id the next transaction will get: every transaction
// that committed so far has a lower one.
func nextXid(t testing.TB, s *pgstore.DB) int64 {
	t.Helper()
	var next int64
	if err := s.Pool().QueryRow(context.Background(), "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&next); err != nil {
		t.Fatal(err)
	}
	return next
}

var _ = pending.ErrNotFound

// The tailer's read is a prepared statement, and PostgreSQL may run it
// with the generic plan it caches, which cannot see the position. That
// plan must look each change's record up by its key, not read the whole
// questions table (which keeps ended questions until retention) on every
// read that finds changes.
func TestTailReadLooksRecordsUpByKey(t *testing.T) {
	s := open(t, database(t))
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, sql := range []string{
		`INSERT INTO questions (id, record, created_at, ended, ended_at)
			SELECT 'q' || i, json_build_object('id', 'q' || i, 'message', repeat('x', 500)), now(), true, now()
			FROM generate_series(1, 20000) i`,
		`INSERT INTO changes (seq, question_id, kind, xid)
			SELECT i, 'q' || (i / 2), CASE WHEN i % 2 = 0 THEN 'asked' ELSE 'ended' END, i FROM generate_series(2, 40001) i`,
		"ANALYZE questions",
		"ANALYZE changes",
		"SET plan_cache_mode = force_generic_plan",
		"PREPARE tail_read AS " + pgstore.ReadSQL,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%.60s: %v", sql, err)
		}
	}
	defer conn.Exec(ctx, "DEALLOCATE tail_read; RESET plan_cache_mode") //nolint:errcheck // the connection is the test's
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE tail_read(1000, 500)")
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.String(), "Seq Scan on questions") || !strings.Contains(plan.String(), "questions_pkey") {
		t.Errorf("the generic plan of the tail's read does not look records up by key:\n%s", plan.String())
	}
}

// A creation or ending notifies the other replicas in the same write to
// the server as the change itself, not through the store's notifier: with
// the notifier stopped, a listener still hears of each change, by the time
// Put returns. On a pool whose every connection is taken, the notifier
// sends it.
func TestChangeNotifiesWithoutTheNotifier(t *testing.T) {
	url := database(t)
	a := open(t, url)
	a.StopNotifier()
	ctx := context.Background()
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN questiond_changes"); err != nil {
		t.Fatal(err)
	}
	q := question("q1")
	for _, step := range []string{"create", "end"} {
		if step == "end" {
			o := reply("x")
			o.At = time.Now()
			q.Ended = &o
		}
		if err := a.Questions().Put(ctx, q); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatalf("no notification after the %s: %v", step, err)
		}
		if n.Channel != "questiond_changes" {
			t.Fatalf("notification on %q", n.Channel)
		}
	}
	// And a refused change (the question has ended) changes nothing but
	// still leaves the connection usable for the next.
	if err := a.Questions().Put(ctx, q); !errors.Is(err, pending.ErrNotFound) {
		t.Fatalf("ending an ended question: %v; want ErrNotFound", err)
	}
	if err := a.Questions().Put(ctx, question("q2")); err != nil {
		t.Fatalf("create after a refusal: %v", err)
	}
	drain := func() {
		for {
			wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err := listener.WaitForNotification(wctx)
			cancel()
			if err != nil {
				return
			}
		}
	}
	drain()
	// When every request connection is taken, the notifier sends it.
	b := open(t, url+"&pool_max_conns=1")
	if err := b.Questions().Put(ctx, question("q3")); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := listener.WaitForNotification(wctx); err != nil {
		t.Fatalf("no notification after a change on a full pool: %v", err)
	}
}

// After a crash, PostgreSQL hands out again the ids of transactions whose
// commits never reached its disk (here: notifications' and other commits
// that do not wait for the disk). A tailer whose position passed such ids
// before the crash, and one started from a Load taken then, must still
// read the changes committed under them afterwards.
func TestTailReadsChangesUnderIdsReusedAfterACrash(t *testing.T) {
	url := database(t)
	server := pgtest.Shared(t)
	ctx := context.Background()
	// Keep the burnt ids' commits in memory until the crash: the WAL
	// writer would otherwise write them out within a fraction of a second.
	if err := server.Exec(ctx, "ALTER SYSTEM SET wal_writer_delay = '10s'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Exec(ctx, "ALTER SYSTEM RESET wal_writer_delay"); err != nil {
			t.Error(err)
		}
		if err := server.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			t.Error(err)
		}
	})
	if err := server.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	s := open(t, url)
	var mu sync.Mutex
	var seen []string
	tail := s.Tail(0, func(c pgstore.Change) {
		mu.Lock()
		seen = append(seen, c.Question.ID)
		mu.Unlock()
	}, pgstore.TailOptions{PollInterval: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	defer tail.Stop()
	if err := s.Questions().Put(ctx, question("before")); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := s.Pool().Exec(ctx, "SELECT set_config('synchronous_commit', 'off', true), pg_current_xact_id()"); err != nil {
			t.Fatal(err)
		}
	}
	passed := nextXid(t, s)
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tail.WaitFor(waitCtx, passed); err != nil {
		t.Fatal(err)
	}
	loader := s.Questions()
	if _, err := loader.Load(ctx); err != nil {
		t.Fatal(err)
	}

	if err := server.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := server.Restart(); err != nil {
		t.Fatal(err)
	}
	var next int64
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := s.Pool().QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&next)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if next >= passed {
		t.Fatalf("after the crash the next id is %d, not below %d: the server reused no id, the test proves nothing", next, passed)
	}
	if err := s.Questions().Put(ctx, question("after")); err != nil {
		t.Fatal(err)
	}
	var late []string
	fromLoad := s.Tail(loader.LoadedSeq(), func(c pgstore.Change) {
		mu.Lock()
		late = append(late, c.Question.ID)
		mu.Unlock()
	}, pgstore.TailOptions{PollInterval: 20 * time.Millisecond})
	defer fromLoad.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		got, gotLate := strings.Join(seen, ","), strings.Join(late, ",")
		mu.Unlock()
		if got == "before,after" && gotLate == "after" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("running tailer handed over %q, want before,after; tailer from the load %q, want after (positions %d, %d; next id after the crash %d)", got, gotLate, tail.Last(), fromLoad.Last(), next)
		}
	}
}

// changeLog records the changes a tailer hands over (its apply is record).
type changeLog struct {
	mu   sync.Mutex
	seen []pgstore.Change
}

func (l *changeLog) record(c pgstore.Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, c)
}

// all is what was handed over so far.
func (l *changeLog) all() []pgstore.Change {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}
