package sse_test

import (
	"fmt"
	"testing"

	"github.com/questiond/questiond/internal/sse"
)

func TestEventsGoWhereTheirDirectoryIsWatched(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	d := dialStream(t, h, "/event?directory=/d")
	e := dialStream(t, h, "/event?directory=/e")
	all := dialStream(t, h, "/event")
	global := dialStream(t, h, "/global/event")
	for _, s := range []*clientStream{d, e, all, global} {
		s.next(t)
	}

	h.publish(t, "/d", "for.d", `{}`)
	h.publish(t, "/e", "for.e", `{}`)
	h.publish(t, "", "for.everyone", `{}`)
	h.publish(t, "/unwatched", "for.nobody.in.particular", `{}`)
	h.publish(t, "", "end", `{}`) // everyone gets it: what came before is complete

	want := map[*clientStream][]string{
		d:   {"for.d", "for.everyone", "end"},
		e:   {"for.e", "for.everyone", "end"},
		all: {"for.d", "for.e", "for.everyone", "for.nobody.in.particular", "end"},
	}
	for s, types := range want {
		for _, typ := range types {
			if got := s.nextLive(t); got.Type != typ {
				t.Fatalf("stream got %s, want %s", got.Type, typ)
			}
		}
	}
	for _, w := range []struct{ dir, typ string }{
		{"/d", "for.d"}, {"/e", "for.e"}, {"", "for.everyone"}, {"/unwatched", "for.nobody.in.particular"}, {"", "end"},
	} {
		g := global.nextGlobal(t)
		dir := ""
		if g.Directory != nil {
			dir = *g.Directory
		}
		if g.Payload.Type != w.typ || dir != w.dir || (g.Project != nil) != (w.dir != "") {
			t.Fatalf("global got %+v, want %s in %q", g, w.typ, w.dir)
		}
	}
}

// A directory whose last client left works again for the next one.
func TestDirectoryStreamOutlivesItsClients(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	first := dialStream(t, h, "/event?directory=/d")
	first.next(t)
	first.close()

	second := dialStream(t, h, "/event?directory=/d")
	second.next(t)
	h.publish(t, "/d", "again", `{}`)
	if got := second.nextLive(t); got.Type != "again" {
		t.Fatalf("got %s", got.Type)
	}
}

// MaxScopes counts directories with a live subscriber: one whose last
// client left is freed, so any number of directories can be used over time.
func TestDirectoriesAreFreedWithTheirLastSubscriber(t *testing.T) {
	const limit = 3
	left := make(chan struct{}, 16)
	h := newHarness(t, harnessConfig{
		opts:  sse.Options{MaxScopes: limit},
		setup: func(b *sse.Broker) { b.SetHooks(nil, func() { left <- struct{}{} }) },
	})
	waitLeft := func() {
		t.Helper()
		await(t, left, "a handler never returned")
	}
	for i := range 4 * limit {
		s := dialStream(t, h, fmt.Sprintf("/event?directory=/x%d", i))
		if s.status != "HTTP/1.1 200 OK" {
			t.Fatalf("directory %d of %d used one after the other: %s %s", i+1, 4*limit, s.status, s.body)
		}
		s.next(t)
		s.close()
		waitLeft()
	}

	// The limit still holds for directories watched at the same time, and
	// a slot comes back when one of them is left.
	var open []*clientStream
	for i := range limit {
		s := dialStream(t, h, fmt.Sprintf("/event?directory=/y%d", i))
		s.next(t)
		open = append(open, s)
	}
	if s := dialStream(t, h, "/event?directory=/z"); s.status != "HTTP/1.1 503 Service Unavailable" {
		t.Fatalf("directory beyond the limit: %s", s.status)
	}
	open[0].close()
	waitLeft()
	if s := dialStream(t, h, "/event?directory=/z"); s.status != "HTTP/1.1 200 OK" {
		t.Fatalf("directory after one was left: %s %s", s.status, s.body)
	}
}
