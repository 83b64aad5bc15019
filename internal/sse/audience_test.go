package sse_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

func publishFor(t testing.TB, h *harness, audience sse.Audience, dir, typ string) {
	t.Helper()
	m := sse.Message{Directory: dir, Audience: audience, Event: sse.Event{Type: typ, Properties: json.RawMessage(`{}`)}}
	if err := h.b.Publish(context.Background(), m); err != nil {
		t.Fatalf("publish %s: %v", typ, err)
	}
}

// A message for one kind of stream reaches that kind only, on both routes
// and in every directory scope; a message for everyone reaches both.
func TestAudiencesSplitStreams(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	standard := dialStream(t, h, "/event?directory=/d")
	console := dialStream(t, h, "/event?directory=/d&console=1")
	globalStandard := dialStream(t, h, "/global/event")
	globalConsole := dialStream(t, h, "/global/event?console=1")
	for _, s := range []*clientStream{standard, console, globalStandard, globalConsole} {
		s.next(t)
	}

	publishFor(t, h, sse.Standard, "/d", "for.standard")
	publishFor(t, h, sse.Console, "/d", "for.console")
	publishFor(t, h, sse.Console, "", "for.console.anywhere")
	publishFor(t, h, sse.Everyone, "/d", "for.everyone")

	for _, s := range []*clientStream{standard} {
		for _, want := range []string{"for.standard", "for.everyone"} {
			if got := s.nextLive(t); got.Type != want {
				t.Fatalf("standard stream got %s, want %s", got.Type, want)
			}
		}
	}
	for _, want := range []string{"for.console", "for.console.anywhere", "for.everyone"} {
		if got := console.nextLive(t); got.Type != want {
			t.Fatalf("console stream got %s, want %s", got.Type, want)
		}
	}
	for _, want := range []string{"for.standard", "for.everyone"} {
		if got := globalStandard.nextGlobal(t); got.Payload.Type != want {
			t.Fatalf("standard global stream got %s, want %s", got.Payload.Type, want)
		}
	}
	for _, want := range []string{"for.console", "for.console.anywhere", "for.everyone"} {
		if got := globalConsole.nextGlobal(t); got.Payload.Type != want {
			t.Fatalf("console global stream got %s, want %s", got.Payload.Type, want)
		}
	}
}

// A new stream's first frames are filtered by audience like live ones.
func TestInitialFramesFollowTheAudience(t *testing.T) {
	h := newHarness(t, harnessConfig{
		initial: func(r *http.Request) []sse.Message {
			return []sse.Message{
				{Audience: sse.Standard, Event: sse.Event{Type: "replay.standard", Properties: json.RawMessage(`{}`)}},
				{Audience: sse.Console, Event: sse.Event{Type: "replay.console", Properties: json.RawMessage(`{}`)}},
				{Event: sse.Event{Type: "replay.everyone", Properties: json.RawMessage(`{}`)}},
			}
		},
	})
	for target, want := range map[string][]string{
		"/event":           {"server.connected", "replay.standard", "replay.everyone"},
		"/event?console=1": {"server.connected", "replay.console", "replay.everyone"},
	} {
		s := dialStream(t, h, target)
		for _, typ := range want {
			if got := s.nextEvent(t); got.Type != typ {
				t.Fatalf("%s got %s, want %s", target, got.Type, typ)
			}
		}
		publishFor(t, h, sse.Everyone, "", "live")
		if got := s.nextEvent(t); got.Type != "live" {
			t.Fatalf("%s got %s after its replay, want live", target, got.Type)
		}
	}
}

func TestWatchingCountsEachKind(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if h.b.Watching(sse.Everyone) || h.b.Watching(sse.Console) || h.b.Watching(sse.Standard) {
		t.Fatal("a broker without streams is watched")
	}
	console := dialStream(t, h, "/global/event?console=1")
	console.next(t)
	if !h.b.Watching(sse.Console) || h.b.Watching(sse.Standard) || !h.b.Watching(sse.Everyone) {
		t.Fatal("one console stream: want Console and Everyone only")
	}
	standard := dialStream(t, h, "/event?directory=/d")
	standard.next(t)
	if !h.b.Watching(sse.Standard) {
		t.Fatal("a standard stream is not counted")
	}
	console.close()
	deadline := time.Now().Add(5 * time.Second)
	for h.b.Watching(sse.Console) {
		if time.Now().After(deadline) {
			t.Fatal("a console stream that left is still counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
