package sse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

func msg(dir, typ string) sse.Message {
	return sse.Message{Directory: dir, Event: sse.Event{Type: typ, Properties: json.RawMessage(`{}`)}}
}

func TestInitialFramesComeFirst(t *testing.T) {
	var h *harness
	h = newHarness(t, harnessConfig{
		initial: func(r *http.Request) []sse.Message {
			return []sse.Message{msg("/d", "pending.1"), msg("/other", "not.mine"), msg("", "pending.2")}
		},
		// The hook runs once the broker registered the subscriber and before
		// initial: an event published there is live, and must come after the
		// initial frames, not be lost.
		setup: func(b *sse.Broker) {
			b.SetHooks(func() {
				if err := b.Publish(context.Background(), msg("/d", "live")); err != nil {
					t.Errorf("publish from hook: %v", err)
				}
			}, nil)
		},
	})
	s := dialStream(t, h, "/event?directory=/d")
	for _, want := range []string{"server.connected", "pending.1", "pending.2", "live"} {
		if got := s.nextEvent(t); got.Type != want || !evtID.MatchString(got.ID) {
			t.Fatalf("got %s %q, want %s", got.Type, got.ID, want)
		}
	}

	g := dialStream(t, h, "/global/event")
	for _, want := range []struct{ typ, dir string }{{"server.connected", ""}, {"pending.1", "/d"}, {"not.mine", "/other"}, {"pending.2", ""}} {
		got := g.nextGlobal(t)
		if got.Payload.Type != want.typ || (want.dir == "") != (got.Directory == nil) || (got.Directory != nil && *got.Directory != want.dir) {
			t.Fatalf("global got %+v, want %s in %q", got, want.typ, want.dir)
		}
	}
}

// store plays the pending store: the state changes, then the event is
// published, outside the lock; a new subscriber reads the state in initial.
type store struct {
	mu   sync.Mutex
	seen []string
}

func (s *store) add(t testing.TB, b *sse.Broker, typ string) {
	s.mu.Lock()
	s.seen = append(s.seen, typ)
	s.mu.Unlock()
	if err := b.Publish(context.Background(), msg("/d", typ)); err != nil {
		t.Errorf("publish: %v", err)
	}
}

func (s *store) snapshot() []sse.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sse.Message, len(s.seen))
	for i, typ := range s.seen {
		out[i] = msg("/d", typ)
	}
	return out
}

func TestNoEventIsLostWhileConnecting(t *testing.T) {
	st := &store{}
	h := newHarness(t, harnessConfig{
		opts:    sse.Options{QueueLength: 4096},
		initial: func(*http.Request) []sse.Message { return st.snapshot() },
	})
	const events, clients = 400, 12
	var wg sync.WaitGroup
	streams := make(chan *clientStream, clients)
	wg.Go(func() {
		for i := range events {
			st.add(t, h.b, fmt.Sprint("e", i))
		}
	})
	for range clients {
		wg.Go(func() {
			s, err := openStream(t, h, "/event?directory=/d")
			if err != nil {
				t.Error(err)
				return
			}
			streams <- s
		})
	}
	wg.Wait()
	st.add(t, h.b, "end")
	close(streams)

	for s := range streams {
		got := map[string]bool{}
		if e := s.nextEvent(t); e.Type != "server.connected" {
			t.Fatalf("first frame %s", e.Type)
		}
		for {
			e := s.nextLive(t)
			got[e.Type] = true // initial and live may overlap: duplicates are fine
			if e.Type == "end" {
				break
			}
		}
		for i := range events {
			if !got[fmt.Sprint("e", i)] {
				t.Fatalf("a client never saw e%d, neither in initial nor live", i)
			}
		}
	}
}

// The state changes and its event is published after initial took its
// snapshot, before the subscriber's first frames went out: the event must
// still arrive, as a live one. initial waits until a watcher on the same
// stream got the event, so the broker has certainly fanned it out by the time
// initial returns; had initial run before the broker registered the
// subscriber, the subscriber would miss it every time.
func TestEventPublishedDuringInitialArrives(t *testing.T) {
	st := &store{}
	var h *harness
	var watcher atomic.Pointer[clientStream]
	h = newHarness(t, harnessConfig{initial: func(r *http.Request) []sse.Message {
		snap := st.snapshot()
		if r.Header.Get("X-Subject") == "" {
			return snap
		}
		st.add(t, h.b, "changed.after.snapshot")
		select {
		case f := <-watcher.Load().frames:
			if !containsType(f, "changed.after.snapshot") {
				t.Errorf("watcher got %s", f)
			}
		case <-time.After(patience):
			t.Error("watcher never got the event")
		}
		return snap
	}})
	st.add(t, h.b, "before")
	w := dialStream(t, h, "/event?directory=/d")
	w.next(t)
	w.next(t) // before, from initial
	watcher.Store(w)

	s := dialStream(t, h, "/event?directory=/d", "X-Subject: yes")
	for _, want := range []string{"server.connected", "before", "changed.after.snapshot"} {
		if got := s.nextEvent(t); got.Type != want {
			t.Fatalf("got %s, want %s", got.Type, want)
		}
	}
}

// A long replay never stalls publishers: while a new subscriber's initial
// func is still running, events for it are published without waiting, and
// they follow the replayed ones on its stream, in order.
func TestLongReplayNeverStallsPublishers(t *testing.T) {
	const replayed, live = 5000, 300
	published := make(chan struct{})
	var h *harness
	h = newHarness(t, harnessConfig{
		opts: sse.Options{QueueLength: live + 10, Heartbeat: time.Hour},
		initial: func(r *http.Request) []sse.Message {
			if r.Header.Get("X-Subject") == "" {
				return nil
			}
			// The publisher runs while initial holds the stream up. Had
			// Publish waited for this subscriber, it would never finish.
			go func() {
				defer close(published)
				for i := range live {
					if err := h.b.Publish(context.Background(), msg("/d", fmt.Sprint("live.", i))); err != nil {
						t.Errorf("publish: %v", err)
						return
					}
				}
			}()
			select {
			case <-published:
			case <-time.After(patience):
				t.Error("publishers waited on a subscriber whose replay was running")
			}
			out := make([]sse.Message, replayed)
			for i := range out {
				out[i] = msg("/d", fmt.Sprint("replayed.", i))
			}
			return out
		},
	})
	s := dialStream(t, h, "/event?directory=/d", "X-Subject: yes")
	if e := s.nextEvent(t); e.Type != "server.connected" {
		t.Fatalf("first frame %s", e.Type)
	}
	for i := range replayed {
		if e := s.nextEvent(t); e.Type != fmt.Sprint("replayed.", i) {
			t.Fatalf("frame %d: %s", i+1, e.Type)
		}
	}
	for i := range live {
		if e := s.nextEvent(t); e.Type != fmt.Sprint("live.", i) {
			t.Fatalf("live frame %d: %s", i, e.Type)
		}
	}
}
