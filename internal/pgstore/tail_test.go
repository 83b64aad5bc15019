package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
)

// Writers on two pools create and end questions concurrently while a
// tailer follows: it sees every change exactly once, numbered 1..n with no
// gap, each question's asked before its ended. Its connection is killed
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
	var mu sync.Mutex
	var seen []pgstore.Change
	tail := a.Tail(0, func(c pgstore.Change) {
		mu.Lock()
		seen = append(seen, c)
		mu.Unlock()
	}, pgstore.TailOptions{PollInterval: 100 * time.Millisecond, Batch: 7})
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
	if err := tail.WaitFor(waitCtx, total); err != nil {
		t.Fatalf("tailer reached %d of %d: %v", tail.Last(), total, err)
	}
	if n := logs.FilterMessage("change log unreachable; reconnecting with backoff").Len(); n != 1 {
		t.Errorf("the outage was logged %d times; want once", n)
	}
	if n := logs.FilterMessage("change log reachable again; caught up").Len(); n != 1 {
		t.Errorf("the recovery was logged %d times; want once", n)
	}
	mu.Lock()
	defer mu.Unlock()
	state := map[string]string{}
	for i, c := range seen {
		if c.Seq != int64(i+1) {
			t.Fatalf("change #%d has number %d: a gap or a repeat", i+1, c.Seq)
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

var _ = pending.ErrNotFound
