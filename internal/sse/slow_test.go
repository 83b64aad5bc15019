package sse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testenv"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// bigEvent is an event of about 64 KiB carrying its sequence number.
func bigEvent(seq int) sse.Message {
	props := fmt.Sprintf(`{"seq":%d,"pad":"%s"}`, seq, strings.Repeat("x", 64<<10))
	return sse.Message{Directory: "/p", Event: sse.Event{Type: "big", Properties: json.RawMessage(props)}}
}

// seqOf reads the sequence number of a bigEvent frame without decoding the
// whole 64 KiB, which would make the race-enabled test crawl.
func seqOf(t testing.TB, frame string) int {
	t.Helper()
	_, rest, ok := strings.Cut(frame, `"type":"big","properties":{"seq":`)
	n, _, ok2 := strings.Cut(rest, ",")
	seq, err := strconv.Atoi(n)
	if !ok || !ok2 || err != nil {
		t.Fatalf("not a big event: %.100s", frame)
	}
	return seq
}

func TestStalledClientIsCutOffWithoutSlowingAnyone(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	left := make(chan struct{}, 16)
	const writeTimeout = time.Minute // far longer than the test may take
	h := newHarness(t, harnessConfig{
		opts:  sse.Options{WriteTimeout: writeTimeout, QueueLength: 32, Heartbeat: time.Hour, Logger: zap.New(core)},
		setup: func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
	})
	stalled := dialStalled(t, h, "/event?directory=/p")
	h.waitJoined(t, 1)
	fast := dialStream(t, h, "/event?directory=/p")
	fast.nextEvent(t)
	if n := h.b.Subscribers(); n != 2 {
		t.Fatalf("%d subscribers, want 2", n)
	}

	// The broker has no back-pressure at all, so the test keeps at most
	// `window` events ahead of the fast reader, well inside its queue; the
	// stalled client gets no such favour.
	// Each publish, with the read of one event, gets the watchdog's whole
	// period: one held up by the stalled client waits for writeTimeout,
	// while the run as a whole (MiBs through the race detector) takes as
	// long as the machine makes it.
	// Publishing goes on until the stalled client is cut off (its socket
	// buffers and its queue full: about 5 MiB here) and `after` events
	// more, up to `total` (64 MiB), which is far more than any socket
	// buffers hold.
	const total, window, after = 1000, 8, 64
	watchdog := time.AfterFunc(writeTimeout/2, func() {
		t.Errorf("publishing is stuck behind the stalled client")
		stalled.Close()
	})
	defer watchdog.Stop()
	start := time.Now()
	var slowest time.Duration
	published, cutAt := 0, -1
	for i := 0; i < total && (cutAt < 0 || i < cutAt+after); i++ {
		watchdog.Reset(writeTimeout / 2)
		t0 := time.Now()
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		slowest = max(slowest, time.Since(t0))
		published++
		if cutAt < 0 && h.b.Stats().CutOff > 0 {
			cutAt = i
		}
		if i >= window {
			if got := seqOf(t, fast.next(t)); got != i-window {
				t.Fatalf("fast client got event %d, want %d", got, i-window)
			}
		}
	}
	for i := max(published-window, 0); i < published; i++ {
		if got := seqOf(t, fast.next(t)); got != i {
			t.Fatalf("fast client got event %d, want %d", got, i)
		}
	}
	elapsed := time.Since(start)

	await(t, left, "the stalled client was never cut off")
	if n := h.b.Subscribers(); n != 1 {
		t.Fatalf("%d subscribers after the cut-off, want 1", n)
	}
	if got, want := h.b.Stats(), (sse.Stats{Subscribers: 1, Published: uint64(published), CutOff: 1}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if slowest >= writeTimeout/2 {
		t.Fatalf("publishing took %v (slowest publish %v): it waited for the stalled client", elapsed, slowest)
	}
	if logs.FilterMessage("event subscriber cut off").FilterField(zap.String("reason", "queue full: the client does not read fast enough")).Len() != 1 {
		t.Errorf("want one cut-off log line, got %v", logs.All())
	}
	t.Logf("%d events of 64 KiB in %v, cut off after %d, slowest publish %v", published, elapsed, cutAt+1, slowest)
}

func TestCloseCutsOffWhatCannotDrainInTime(t *testing.T) {
	left := make(chan struct{}, 16)
	h := newHarness(t, harnessConfig{
		opts:  sse.Options{WriteTimeout: time.Minute, QueueLength: 1000, Heartbeat: time.Hour},
		setup: func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
	})
	dialStalled(t, h, "/event?directory=/p")
	h.waitJoined(t, 1)
	// Enough to fill the socket buffers (6 MiB, as in the other close
	// tests), so the writer is stuck in a write and frames wait in the queue.
	for i := range 100 {
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := h.b.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("close took %v with a 200ms context", d)
	}
	await(t, left, "the stalled subscriber's handler never returned")
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers", n)
	}
	// Once the last handler returned, Close completes.
	if err := h.b.Close(context.Background()); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestClientThatStopsReadingIsCutOffAtTheWriteTimeout(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	left := make(chan struct{}, 16)
	h := newHarness(t, harnessConfig{
		// A queue that never fills: only the write deadline can act.
		opts:  sse.Options{WriteTimeout: 200 * time.Millisecond, QueueLength: 10_000, Heartbeat: time.Hour, Logger: zap.New(core)},
		setup: func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
	})
	dialStalled(t, h, "/event?directory=/p")
	h.waitJoined(t, 1)
	for i := 0; ; i++ {
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-left:
			if n := h.b.Subscribers(); n != 0 {
				t.Fatalf("%d subscribers", n)
			}
			cut := logs.FilterMessage("event subscriber cut off").All()
			if len(cut) != 1 || cut[0].ContextMap()["reason"] != "write timed out: the client does not read" {
				t.Fatalf("log: %v", logs.All())
			}
			t.Logf("cut off after %d events of 64 KiB", i+1)
			return
		default:
		}
		if i == 5000 {
			t.Fatal("never cut off")
		}
	}
}

// TestNeverReadingClientDelaysNobody: 10 000 events go out while one client
// never reads from its socket. Publishing never waits, the clients that read
// get every event in order, and the one that does not is cut off.
func TestNeverReadingClientDelaysNobody(t *testing.T) {
	testenv.Heavy(t, "10 MB through HTTP: seconds under -race")
	core, logs := observer.New(zapcore.WarnLevel)
	left := make(chan struct{}, 16)
	const writeTimeout = 10 * time.Minute // far longer than the test may take, even under -race on a busy machine
	h := newHarness(t, harnessConfig{
		opts:  sse.Options{WriteTimeout: writeTimeout, QueueLength: 256, Heartbeat: time.Hour, Logger: zap.New(core)},
		setup: func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
	})
	dialStalled(t, h, "/event?directory=/p")
	h.waitJoined(t, 1)

	const total, readers, window = 10_000, 2, 64
	// 10 MB in all: far more than the stalled connection's socket buffers
	// and queue hold.
	pad := strings.Repeat("x", 1<<10)
	var progress [readers]atomic.Int64 // events each reader got
	var wg sync.WaitGroup
	for r := range readers {
		s := dialStream(t, h, "/event?directory=/p")
		s.nextEvent(t)
		wg.Go(func() {
			for i := range total {
				if seq := seqOf(t, s.next(t)); seq != i {
					t.Errorf("reader %d got event %d, want %d", r, seq, i)
					return
				}
				progress[r].Add(1)
			}
		})
	}
	slowestReader := func() int64 {
		n := progress[0].Load()
		for r := range readers {
			n = min(n, progress[r].Load())
		}
		return n
	}

	// The test, not the broker, keeps the readers' queues from filling: it
	// stays at most `window` events ahead of the slowest one. The stalled
	// client gets no such favour.
	start := time.Now()
	var slowest time.Duration
	for i := range total {
		for int64(i)-slowestReader() >= window && !t.Failed() {
			time.Sleep(100 * time.Microsecond) // waits for the readers, never orders anything
		}
		m := sse.Message{Directory: "/p", Event: sse.Event{Type: "big", Properties: json.RawMessage(fmt.Sprintf(`{"seq":%d,"pad":"%s"}`, i, pad))}}
		t0 := time.Now()
		if err := h.b.Publish(context.Background(), m); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		slowest = max(slowest, time.Since(t0))
	}
	wg.Wait()
	elapsed := time.Since(start)

	await(t, left, "the client that never reads was never cut off")
	if n := h.b.Subscribers(); n != readers {
		t.Fatalf("%d subscribers, want the %d readers", n, readers)
	}
	if logs.FilterMessage("event subscriber cut off").FilterField(zap.String("reason", "queue full: the client does not read fast enough")).Len() != 1 {
		t.Errorf("want one cut-off log line, got %v", logs.All())
	}
	if slowest >= writeTimeout/2 {
		t.Fatalf("publishing took %v (slowest publish %v): it waited for the client that does not read", elapsed, slowest)
	}
	t.Logf("%d events to %d readers in %v, slowest publish %v", total, readers, elapsed, slowest)
}

// A client that stops reading is cut off once the frames queued for it
// weigh QueueBytes, long before QueueLength frames: frames carry agents'
// text, and a stalled stream must not pin a thousand megabyte questions.
func TestClientThatStopsReadingIsCutOffAtTheQueuedBytes(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	left := make(chan struct{}, 16)
	h := newHarness(t, harnessConfig{
		// Neither the frame count nor the write deadline can act.
		opts:  sse.Options{WriteTimeout: time.Hour, QueueLength: 100_000, QueueBytes: 1 << 20, Heartbeat: time.Hour, Logger: zap.New(core)},
		setup: func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
	})
	dialStalled(t, h, "/event?directory=/p")
	h.waitJoined(t, 1)
	// What the kernel's socket buffers take before the writer blocks, plus
	// 1 MiB queued: 2 000 events of 64 KiB (125 MiB) is far more.
	for i := range 2000 {
		if err := h.b.Publish(context.Background(), bigEvent(i)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-left:
			cut := logs.FilterMessage("event subscriber cut off").All()
			if len(cut) != 1 || cut[0].ContextMap()["reason"] != "queue full: the client does not read fast enough" {
				t.Fatalf("log: %v", logs.All())
			}
			t.Logf("cut off after %d events of 64 KiB", i+1)
			return
		default:
		}
	}
	t.Fatal("a client that does not read was never cut off, with 125 MiB published to it")
}

// A frame larger than QueueBytes still reaches a subscriber that has
// nothing queued: the bound is on what piles up, not on one question.
func TestAFrameLargerThanTheQueueBytesStillGoesOut(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: sse.Options{QueueBytes: 16 << 10, Heartbeat: time.Hour}})
	c := dialStream(t, h, "/event?directory=/p")
	c.nextEvent(t)
	if err := h.b.Publish(context.Background(), bigEvent(7)); err != nil {
		t.Fatal(err)
	}
	if got := seqOf(t, c.next(t)); got != 7 {
		t.Fatalf("got event %d, want 7", got)
	}
}
