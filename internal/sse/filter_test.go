package sse_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// holdingFilter drops frames of type "drop", holds those whose type
// starts with "hold" until its wake is called, and passes the rest.
type holdingFilter struct {
	mu      sync.Mutex
	held    []sse.Frame
	sources []sse.Source
	notes   []string
	stopped chan struct{}
}

func (f *holdingFilter) Admit(fr sse.Frame) []sse.Frame {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sources = append(f.sources, fr.From)
	f.notes = append(f.notes, fr.Note)
	switch text := fr.Text(); {
	case bytes.Contains(text, []byte(`"type":"drop"`)):
		return nil
	case bytes.Contains(text, []byte(`"type":"hold`)):
		f.held = append(f.held, fr)
		return nil
	}
	return []sse.Frame{fr}
}

func (f *holdingFilter) Due() []sse.Frame {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.held
	f.held = nil
	return out
}

func (f *holdingFilter) Stop() { close(f.stopped) }

func TestAFilterDropsHoldsAndReleasesFramesInOrder(t *testing.T) {
	filters := make(chan *holdingFilter, 1)
	wakes := make(chan func(), 1)
	h := newHarness(t, harnessConfig{
		initial: func(*http.Request) []sse.Message {
			return []sse.Message{
				{Event: sse.Event{Type: "hold.replayed", Properties: json.RawMessage(`{}`)}},
				{Event: sse.Event{Type: "replayed", Properties: json.RawMessage(`{}`)}, Note: "replay note"},
			}
		},
		filter: func(wake func()) sse.Filter {
			f := &holdingFilter{stopped: make(chan struct{})}
			filters <- f
			wakes <- wake
			return f
		},
	})
	s := dialStream(t, h, "/event")
	f := await(t, filters, "no filter made")
	wake := await(t, wakes, "no wake given")
	for _, want := range []string{"server.connected", "replayed"} {
		if e := s.nextEvent(t); e.Type != want {
			t.Fatalf("got %s, want %s", e.Type, want)
		}
	}
	for _, typ := range []string{"a", "drop", "hold.live", "b"} {
		h.publish(t, "", typ, `{}`)
	}
	for _, want := range []string{"a", "b"} {
		if e := s.nextLive(t); e.Type != want {
			t.Fatalf("got %s, want %s", e.Type, want)
		}
	}
	wake()
	for _, want := range []string{"hold.replayed", "hold.live"} {
		if e := s.nextLive(t); e.Type != want {
			t.Fatalf("after wake: got %s, want %s", e.Type, want)
		}
	}
	f.mu.Lock()
	if len(f.sources) == 0 || f.sources[0] != sse.FromBroker {
		t.Errorf("sources %v: the first frame of a broker-only stream is the broker's", f.sources)
	}
	if len(f.notes) < 3 || f.notes[2] != "replay note" {
		t.Errorf("notes %q: the replayed message's note did not reach the filter", f.notes)
	}
	f.mu.Unlock()
	s.close()
	await(t, f.stopped, "the filter was not stopped when the stream ended")
	wake() // after the end: harmless
}

func TestAMergedStreamsFilterSeesBothSources(t *testing.T) {
	filters := make(chan *holdingFilter, 1)
	feeds := make(chan *testFeed, 1)
	h := newHarness(t, harnessConfig{
		feed: func(*http.Request) sse.Feed {
			f := newTestFeed()
			feeds <- f
			return f
		},
		filter: func(func()) sse.Filter {
			f := &holdingFilter{stopped: make(chan struct{})}
			filters <- f
			return f
		},
	})
	feed, s := openMerged(t, h, feeds, "/event")
	f := await(t, filters, "no filter made")
	feed.send(`data: {"type":"drop","properties":{}}` + "\n\n")
	feed.send(`data: {"type":"upstream","properties":{}}` + "\n\n")
	if e := s.nextEvent(t); e.Type != "upstream" {
		t.Fatalf("got %s, want upstream (drop dropped)", e.Type)
	}
	if err := h.b.Publish(context.Background(), sse.Message{Event: sse.Event{Type: "ours", Properties: json.RawMessage(`{}`)}, Note: "live note"}); err != nil {
		t.Fatal(err)
	}
	if e := s.nextEvent(t); e.Type != "ours" {
		t.Fatalf("got %s, want ours", e.Type)
	}
	f.mu.Lock()
	got := append([]sse.Source(nil), f.sources...)
	f.mu.Unlock()
	if f.notes[len(f.notes)-1] != "live note" {
		t.Errorf("notes %q: the published message's note did not reach the filter", f.notes)
	}
	want := []sse.Source{sse.FromFeed, sse.FromFeed, sse.FromFeed, sse.FromBroker}
	if len(got) != len(want) {
		t.Fatalf("sources %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sources %v, want %v", got, want)
		}
	}
	s.close()
	await(t, f.stopped, "the filter was not stopped when the stream ended")
}

// Frames a filter holds do not count against the queue's bounds; once it
// releases them, they do, as any frames: too many cut the client off.
func TestFramesAFilterReleasesKeepTheQueueBounds(t *testing.T) {
	wakes := make(chan func(), 1)
	h := newHarness(t, harnessConfig{
		opts: sse.Options{QueueLength: 4, Heartbeat: time.Hour},
		filter: func(wake func()) sse.Filter {
			wakes <- wake
			return &holdingFilter{stopped: make(chan struct{})}
		},
	})
	s := dialStream(t, h, "/event")
	s.nextEvent(t)
	wake := await(t, wakes, "no wake given")
	for i := range 10 {
		h.publish(t, "", fmt.Sprint("hold.", i), `{}`)
	}
	h.publish(t, "", "passed", `{}`)
	if e := s.nextLive(t); e.Type != "passed" {
		t.Fatalf("got %s, want passed", e.Type)
	}
	if cut := h.b.Stats().CutOff; cut != 0 {
		t.Fatalf("%d cut off while the filter held the frames", cut)
	}
	wake()
	if err := s.waitEnd(t); err == nil {
		t.Fatal("the stream ended cleanly; want it cut off")
	}
	if cut := h.b.Stats().CutOff; cut != 1 {
		t.Fatalf("%d cut off, want 1", cut)
	}
}
