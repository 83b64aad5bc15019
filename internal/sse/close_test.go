package sse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/sse"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A client that stopped reading gets CloseGrace to take what was queued for
// it, not the caller's whole context: Close returns at the grace, and the
// streams that keep up still end cleanly with everything.
func TestStalledStreamHoldsCloseForItsGraceOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const grace = 2 * time.Second
		core, logs := observer.New(zapcore.WarnLevel)
		b, err := sse.New(sse.Options{WriteTimeout: time.Hour, CloseGrace: grace, Heartbeat: 24 * time.Hour, Logger: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		stalled, reader := newGateWriter(true), newGateWriter(false)
		stalledDone := serveGated(t.Context(), b, stalled, "/p")
		readerDone := serveGated(t.Context(), b, reader, "/p")
		synctest.Wait() // the stalled one is stuck in its first write
		for i := range 3 {
			if err := b.Publish(context.Background(), msg("/p", fmt.Sprint("e", i))); err != nil {
				t.Fatal(err)
			}
		}

		start := time.Now()
		if err := b.Close(context.Background()); err != nil {
			t.Fatalf("close: %v", err)
		}
		if d := time.Since(start); d > grace {
			t.Fatalf("close took %v, grace %v", d, grace)
		}
		<-stalledDone
		<-readerDone
		if got, want := reader.types(t), []string{"server.connected", "e0", "e1", "e2"}; !slices.Equal(got, want) {
			t.Fatalf("reader got %q, want %q", got, want)
		}
		if got := stalled.types(t); len(got) != 0 {
			t.Fatalf("stalled client got %q", got)
		}
		cut := logs.FilterMessage("event subscriber cut off").All()
		if len(cut) != 1 || cut[0].ContextMap()["reason"] != "broker closed and the client did not take what was queued in time" {
			t.Fatalf("log: %v", logs.All())
		}
	})
}

// The same over TCP: the grace is enforced with real write deadlines.
func TestStalledClientHoldsCloseForItsGraceOnly(t *testing.T) {
	const grace = 300 * time.Millisecond
	h := newHarness(t, harnessConfig{
		opts: sse.Options{WriteTimeout: time.Minute, CloseGrace: grace, QueueLength: 1000, Heartbeat: time.Hour},
	})
	dialStalled(t, h, "/event?directory=/p")
	h.waitJoined(t, 1)
	// 6 MB: enough to fill the socket buffers, so the stream is stuck in a
	// write with frames queued behind it.
	for i := range 100 {
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	start := time.Now()
	if err := h.b.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	// Slack for a loaded machine; the caller's context is far longer.
	if d := time.Since(start); d > grace+3*time.Second {
		t.Fatalf("close took %v with a %v grace", d, grace)
	}
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after close", n)
	}
}

// Every Publish that returned nil reaches every subscriber before its stream
// ends, however it races Close; after Close, Publish returns ErrClosed; and
// nothing is written after a stream's end (gateWriter panics on that).
func TestPublishRacingCloseLosesNothing(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 30
	}
	var accepted, refused int
	for it := range iterations {
		a, r := publishCloseRound(t, it)
		accepted += a
		refused += r
		if t.Failed() {
			t.FailNow()
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("%d accepted, %d refused: the rounds never raced", accepted, refused)
	}
	t.Logf("%d rounds: %d events accepted and all delivered, %d refused", iterations, accepted, refused)
}

func publishCloseRound(t *testing.T, round int) (accepted, refused int) {
	b, err := sse.New(sse.Options{Heartbeat: time.Hour, QueueLength: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var connected sync.WaitGroup
	type sub struct {
		w    *gateWriter
		done <-chan struct{}
	}
	var subs []sub
	for _, dir := range []string{"/d", ""} {
		w := newGateWriter(false)
		connected.Add(1)
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/event", nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.ServeEvent(w, r, dir, sse.Standard, func() []sse.Message { connected.Done(); return nil })
		}()
		subs = append(subs, sub{w, done})
	}
	connected.Wait()

	var mu sync.Mutex
	var ids []string
	var nRefused atomic.Int64
	var wg sync.WaitGroup
	var published atomic.Int64
	for p := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("evt_%04x%02x%06x%014d", round, p, i, 0)
				m := sse.Message{Directory: "/d", Event: sse.Event{ID: id, Type: "t", Properties: json.RawMessage(`{}`)}}
				err := b.Publish(context.Background(), m)
				if errors.Is(err, sse.ErrClosed) {
					nRefused.Add(1)
					return
				}
				if err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
				published.Add(1)
			}
		})
	}
	for published.Load() < int64(round%50) {
		time.Sleep(10 * time.Microsecond) // lets a varying number of events through before Close; not an ordering
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	wg.Wait()
	for _, s := range subs {
		<-s.done
		got := map[string]bool{}
		s.w.mu.Lock()
		for _, f := range s.w.frames {
			var e wireEvent
			if err := json.Unmarshal([]byte(f[len("data: "):len(f)-2]), &e); err != nil {
				t.Fatalf("frame %q: %v", f, err)
			}
			got[e.ID] = true
		}
		s.w.mu.Unlock()
		for _, id := range ids {
			if !got[id] {
				t.Errorf("round %d: event %s was accepted but never delivered", round, id)
			}
		}
	}
	if err := b.Publish(context.Background(), msg("/d", "late")); !errors.Is(err, sse.ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	return len(ids), int(nRefused.Load())
}
