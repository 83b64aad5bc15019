package sse_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
	"go.uber.org/goleak"
)

func TestConnectDisconnectLeavesNoGoroutine(t *testing.T) {
	left := make(chan struct{}, 1)
	h := newHarness(t, harnessConfig{setup: func(b *sse.Broker) {
		b.SetHooks(nil, func() { left <- struct{}{} })
	}})
	cycle := func(target string) {
		s := dialStream(t, h, target)
		s.nextEvent(t)
		s.close()
		await(t, left, fmt.Sprintf("handler of %s never returned", target))
	}
	// net/http's pools and the runtime's caches warm up first: they are not
	// part of the leak.
	for _, target := range []string{"/event", "/event?directory=/p", "/global/event"} {
		cycle(target)
	}
	baseline := runtime.NumGoroutine()
	ignore := goleak.IgnoreCurrent()

	for i := range 60 {
		cycle([]string{"/event", "/event?directory=/p", "/global/event"}[i%3])
	}
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after every client left", n)
	}
	// Closed connections take a moment to be torn down by net/http; goleak
	// retries until then.
	goleak.VerifyNone(t, ignore)
	if n := runtime.NumGoroutine(); n > baseline {
		t.Fatalf("%d goroutines, %d before the cycles", n, baseline)
	}
}

func TestCloseEndsStreamsCleanly(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	streams := []*clientStream{
		dialStream(t, h, "/event"),
		dialStream(t, h, "/event?directory=/p"),
		dialStream(t, h, "/global/event"),
	}
	for _, s := range streams {
		s.next(t)
	}
	h.publish(t, "/p", "last", `{}`)

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	start := time.Now()
	if err := h.b.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("close took %v", d)
	}
	for i, s := range streams {
		// What was queued still arrives, then the response ends properly.
		if f := s.next(t); !json.Valid([]byte(f)) || !containsType(f, "last") {
			t.Errorf("stream %d: got %s, want the last event", i, f)
		}
		if err := s.waitEnd(t); err != nil {
			t.Errorf("stream %d did not end cleanly: %v", i, err)
		}
	}
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after close", n)
	}

	err := h.b.Publish(context.Background(), sse.Message{Event: sse.Event{Type: "t", Properties: json.RawMessage(`{}`)}})
	if !errors.Is(err, sse.ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	s := dialStream(t, h, "/event")
	if s.status != "HTTP/1.1 503 Service Unavailable" {
		t.Fatalf("subscribe after close: %s", s.status)
	}
	if err := h.refusal(t); !errors.Is(err, sse.ErrClosed) {
		t.Fatalf("subscribe after close refused with %v, want ErrClosed", err)
	}
}

func containsType(frame, typ string) bool {
	var e wireEvent
	var g wireGlobal
	return (json.Unmarshal([]byte(frame), &e) == nil && e.Type == typ) ||
		(json.Unmarshal([]byte(frame), &g) == nil && g.Payload.Type == typ)
}

func TestServerShutdownClosesTheBroker(t *testing.T) {
	var h *harness
	h = newHarness(t, harnessConfig{server: func(ts *httptest.Server) {
		ts.Config.RegisterOnShutdown(func() {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			if err := h.b.Close(ctx); err != nil {
				t.Errorf("close broker on shutdown: %v", err)
			}
		})
	}})
	s := dialStream(t, h, "/event")
	s.next(t)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.ts.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a connected client: %v", err)
	}
	t.Logf("shutdown took %v", time.Since(start))
	if err := s.waitEnd(t); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
}

func TestConcurrentPublishSubscribeAndClose(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: sse.Options{Heartbeat: time.Millisecond}})
	var wg sync.WaitGroup
	var streamed atomic.Int64
	stop := make(chan struct{})

	for p := range 4 {
		wg.Go(func() {
			for i := 0; !isClosed(stop); i++ {
				m := sse.Message{Directory: fmt.Sprint("/d", (p+i)%4), Event: sse.Event{Type: "t", Properties: json.RawMessage(`{"n":1}`)}}
				if i%5 == 0 {
					m.Directory = ""
				}
				if err := h.b.Publish(context.Background(), m); err != nil {
					if !errors.Is(err, sse.ErrClosed) {
						t.Errorf("publish: %v", err)
					}
					return
				}
			}
		})
	}
	// Subscribers come and go, through HTTP and in-process; the in-process
	// ones also leave by cancelling their request.
	for c := range 16 {
		wg.Go(func() {
			for i := 0; !isClosed(stop); i++ {
				if c%2 == 0 {
					target := []string{"/event", "/event?directory=/d1", "/global/event", "/event?directory=/d3"}[(c+i)%4]
					resp, err := http.Get(h.ts.URL + target)
					if err != nil {
						// Under this flood a new client can be cut off before
						// its first frame, even before its headers went out.
						continue
					}
					buf := make([]byte, 512)
					if n, _ := resp.Body.Read(buf); n > 0 && resp.StatusCode == http.StatusOK {
						streamed.Add(1)
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusServiceUnavailable {
						return // closed
					}
					continue
				}
				ctx, cancel := context.WithCancel(context.Background())
				got := make(chan struct{}, 1)
				w := newMemWriter(func([]byte) {
					select {
					case got <- struct{}{}:
					default:
					}
				})
				r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event", nil)
				done := make(chan struct{})
				var refused error
				go func() {
					defer close(done)
					refused = h.b.ServeEvent(w, r, fmt.Sprint("/d", i%4), sse.Standard, nil)
				}()
				select {
				case <-got:
					streamed.Add(1)
				case <-done:
				}
				cancel()
				<-done
				if errors.Is(refused, sse.ErrClosed) {
					return
				}
			}
		})
	}

	// Let everything overlap for a while, then close under load.
	closed := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() {
		defer close(closed)
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := h.b.Close(ctx); err != nil {
			t.Errorf("close under load: %v", err)
		}
		close(stop)
	})
	wg.Wait()
	<-closed // the workers may all have seen the broker closed before Close returned
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after close", n)
	}
	if streamed.Load() == 0 {
		t.Fatal("no subscriber ever got a frame")
	}
	t.Logf("%d subscriptions got frames", streamed.Load())
}

// TestSubscribeCyclesReturnToBaseline: 1 000 clients, each on a directory of
// its own, connect and leave one after another; goroutines and the live heap
// come back to where they were, and no directory stays behind.
func TestSubscribeCyclesReturnToBaseline(t *testing.T) {
	left := make(chan struct{}, 1)
	h := newHarness(t, harnessConfig{setup: func(b *sse.Broker) {
		b.SetHooks(nil, func() { left <- struct{}{} })
	}})
	// A bare client: the harness's clientStream stays referenced by its
	// t.Cleanup, which would look like a leak here.
	cycle := func(i int) {
		conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(patience))
		dir := fmt.Sprintf("/cycle/%d", i)
		if _, err := fmt.Fprintf(conn, "GET /event?directory=%s HTTP/1.1\r\nHost: questiond.test\r\n\r\n", dir); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		if status, err := br.ReadString('\n'); status != "HTTP/1.1 200 OK\r\n" {
			t.Fatalf("cycle %d: %q %v", i, status, err)
		}
		for frames := 0; frames < 2; {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
			if strings.HasPrefix(line, "data: ") {
				frames++
				if frames == 1 { // server.connected: registered; now use the queue
					h.publish(t, dir, "t", `{}`)
				}
			}
		}
		conn.Close()
		await(t, left, fmt.Sprintf("handler of cycle %d never returned", i))
	}
	for i := range 50 { // net/http's pools and the runtime's caches warm up
		cycle(-1 - i)
	}
	liveHeap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	ignore := goleak.IgnoreCurrent()
	goroutines := runtime.NumGoroutine()
	heap := liveHeap()

	const cycles = 1000
	for i := range cycles {
		cycle(i)
	}
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after every client left", n)
	}
	goleak.VerifyNone(t, ignore) // retries while net/http tears connections down
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Fatalf("%d goroutines, %d before the cycles", n, goroutines)
	}
	// A subscriber or a directory kept per cycle would be ≥ 1 KiB each.
	const tolerance = 256 << 10
	if after := liveHeap(); after > heap+tolerance {
		t.Fatalf("live heap %d bytes after %d cycles, %d before", after, cycles, heap)
	}
	t.Logf("live heap %d → %d bytes over %d cycles", heap, liveHeap(), cycles)
}
