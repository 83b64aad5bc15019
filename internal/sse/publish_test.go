package sse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/sse"
)

func TestNothingIsKeptOrReplayed(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	props := json.RawMessage(`{"pad":"` + strings.Repeat("x", 1000) + `"}`)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 25_000
	for i := range n {
		m := sse.Message{Directory: fmt.Sprint("/d", i%3), Event: sse.Event{Type: "question.asked", Properties: props}}
		if err := h.b.Publish(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Kept events would hold about 50 MB (the /event and the /global frame).
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 16<<20 {
		t.Errorf("heap grew by %d bytes over %d publishes", grown, n)
	}

	s := dialStream(t, h, "/event")
	if e := s.nextEvent(t); e.Type != "server.connected" {
		t.Fatalf("first frame %s", e.Type)
	}
	h.publish(t, "", "marker", `{}`)
	if e := s.nextLive(t); e.Type != "marker" {
		t.Fatalf("a new subscriber got %s before the first live event", e.Type)
	}
}

func TestEventPublishedAfterSubscribingArrives(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	s := dialStream(t, h, "/event?directory=/p")
	s.nextEvent(t) // server.connected: the subscriber is registered
	for i := range 3 {
		id := fmt.Sprintf("evt_%012x%s", i, strings.Repeat("A", 14))
		m := sse.Message{Directory: "/p", Event: sse.Event{ID: id, Type: "question.asked", Properties: json.RawMessage(`{}`)}}
		if err := h.b.Publish(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		if e := s.nextLive(t); e.ID != id {
			t.Fatalf("got %s %s, want %s", e.Type, e.ID, id)
		}
	}
}

func TestPublishAssignsEventIDs(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	s := dialStream(t, h, "/event")
	s.nextEvent(t)
	h.publish(t, "", "a", `{}`)
	h.publish(t, "", "b", `{}`)
	a, b := s.nextLive(t), s.nextLive(t)
	if !evtID.MatchString(a.ID) || !evtID.MatchString(b.ID) || a.ID >= b.ID {
		t.Fatalf("ids %q, %q: want fresh ascending evt_ ids", a.ID, b.ID)
	}
}

func TestEmptyEventIsRefusedAndStreamsGoOn(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	s := dialStream(t, h, "/event")
	g := dialStream(t, h, "/global/event")
	s.nextEvent(t)
	g.next(t)

	for _, e := range []sse.Event{
		{Type: "", Properties: json.RawMessage(`{}`)},
		{Type: "question.asked"},
		{Type: "question.asked", Properties: json.RawMessage(" \n")},
		{Type: "question.asked", Properties: json.RawMessage("null")},
	} {
		err := h.b.Publish(context.Background(), sse.Message{Event: e})
		if !errors.Is(err, sse.ErrEmptyEvent) {
			t.Errorf("publish %+v: %v, want ErrEmptyEvent", e, err)
		}
	}
	h.publish(t, "", "after", `{"ok":true}`)
	if e := s.nextLive(t); e.Type != "after" {
		t.Fatalf("/event got %s", e.Type)
	}
	if e := g.nextGlobal(t); e.Payload.Type != "after" {
		t.Fatalf("/global/event got %s", e.Payload.Type)
	}
}

func TestInvalidEventIsRefused(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	for _, e := range []sse.Event{
		{Type: "t", Properties: json.RawMessage(`[1]`)},
		{Type: "t", Properties: json.RawMessage(`"x"`)},
		{Type: "t", Properties: json.RawMessage(`{"a":`)},
		{Type: "t", Properties: json.RawMessage(`{}`), ID: "que_2290d9f660010JHxtaPXkLI85Z"},
	} {
		err := h.b.Publish(context.Background(), sse.Message{Event: e})
		if !errors.Is(err, sse.ErrInvalidEvent) {
			t.Errorf("publish %+v: %v, want ErrInvalidEvent", e, err)
		}
	}
}

func TestPublishWithEndedContext(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.b.Publish(ctx, sse.Message{Event: sse.Event{Type: "t", Properties: json.RawMessage(`{}`)}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}
