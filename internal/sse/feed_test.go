package sse_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// testFeed is a Feed the test drives: Next returns what send and end hand
// it, in order, until Close.
type testFeed struct {
	items     chan feedItem
	closed    chan struct{}
	closeOnce sync.Once
	closes    atomic.Int32
}

type feedItem struct {
	frame string
	err   error
}

var errFeedClosed = errors.New("test feed closed")

func newTestFeed() *testFeed {
	return &testFeed{items: make(chan feedItem, 4096), closed: make(chan struct{})}
}

func (f *testFeed) Next() ([]byte, error) {
	select {
	case <-f.closed:
		return nil, errFeedClosed
	default:
	}
	select {
	case it := <-f.items:
		return []byte(it.frame), it.err
	case <-f.closed:
		return nil, errFeedClosed
	}
}

func (f *testFeed) Close() error {
	f.closes.Add(1)
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}

func (f *testFeed) send(frames ...string) {
	for _, fr := range frames {
		f.items <- feedItem{frame: fr}
	}
}

func (f *testFeed) end(err error) { f.items <- feedItem{err: err} }

// waitClosed fails the test unless the broker closes the feed, exactly once.
func (f *testFeed) waitClosed(t testing.TB) {
	t.Helper()
	select {
	case <-f.closed:
	case <-time.After(patience):
		t.Fatal("the feed was never closed")
	}
	if n := f.closes.Load(); n != 1 {
		t.Fatalf("feed closed %d times, want once", n)
	}
}

// upstream is a frame as upstream OpenCode sends it on target's stream.
func upstream(target, id, typ, props string) string {
	event := fmt.Sprintf(`{"id":%q,"type":%q,"properties":%s}`, id, typ, props)
	if strings.HasPrefix(target, "/global/") {
		return `data: {"directory":"/p","project":"global","payload":` + event + "}\n\n"
	}
	return "data: " + event + "\n\n"
}

// typeOf is the event type of a frame's JSON on either stream.
func typeOf(t testing.TB, frame string) string {
	t.Helper()
	var v struct {
		Type    string `json:"type"`
		Payload struct {
			Type string `json:"type"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(frame), &v); err != nil {
		t.Fatalf("frame %q: %v", frame, err)
	}
	if v.Payload.Type != "" {
		return v.Payload.Type
	}
	return v.Type
}

// feedHarness serves merged streams; each stream's feed comes on feeds.
func feedHarness(t testing.TB, opts sse.Options, initial func(r *http.Request) []sse.Message) (*harness, chan *testFeed) {
	feeds := make(chan *testFeed, 16)
	h := newHarness(t, harnessConfig{
		opts:    opts,
		initial: initial,
		feed: func(*http.Request) sse.Feed {
			f := newTestFeed()
			feeds <- f
			return f
		},
	})
	return h, feeds
}

// openAsync opens a stream on another goroutine: on an HTTP/1.1
// connection the response head comes with the first frame, which waits
// for the feed.
func openAsync(t testing.TB, h *harness, target string) <-chan *clientStream {
	out := make(chan *clientStream, 1)
	go func() {
		s, err := openStream(t, h, target)
		if err != nil {
			t.Error(err)
			close(out)
			return
		}
		out <- s
	}()
	return out
}

// openMerged opens a merged stream of target whose feed has connected,
// and reads that first frame.
func openMerged(t testing.TB, h *harness, feeds <-chan *testFeed, target string) (*testFeed, *clientStream) {
	t.Helper()
	opened := openAsync(t, h, target)
	feed := await(t, feeds, "no feed")
	feed.send(upstream(target, "evt_up0", "server.connected", `{}`))
	s := await(t, opened, "stream not opened")
	if s == nil {
		t.FailNow()
	}
	s.next(t)
	return feed, s
}

func pendingQuestion(*http.Request) []sse.Message {
	return []sse.Message{{Directory: "/p", Event: sse.Event{Type: "question.asked", Properties: json.RawMessage(`{"id":"que_1"}`)}}}
}

// A merged stream starts with the feed's first frame (upstream's
// server.connected, exactly as it came, and no server.connected of the
// broker's), then the replay, then what was published while the feed had
// not connected yet; then both sides as they come.
func TestMergedStreamStartsWithTheFeedsFirstFrame(t *testing.T) {
	for _, target := range []string{"/event?directory=/p", "/global/event"} {
		t.Run(target, func(t *testing.T) {
			h, feeds := feedHarness(t, sse.Options{Heartbeat: time.Hour}, pendingQuestion)
			opened := openAsync(t, h, target)
			feed := await(t, feeds, "no feed")
			h.waitSubscribers(t, 1)
			h.publish(t, "/p", "live.early", `{"n":1}`)
			connected := upstream(target, "evt_up0", "server.connected", `{}`)
			feed.send(connected)
			s := await(t, opened, "stream not opened")
			if s == nil {
				t.FailNow()
			}
			if got := s.next(t); got+"\n\n" != strings.TrimPrefix(connected, "data: ") {
				t.Fatalf("first frame %q, want upstream's %q", got, connected)
			}
			for _, want := range []string{"question.asked", "live.early"} {
				if got := typeOf(t, s.next(t)); got != want {
					t.Fatalf("got %s, want %s", got, want)
				}
			}
			later := upstream(target, "evt_up1", "session.updated", `{"sessionID":"ses_1"}`)
			feed.send(later)
			if got := s.next(t); got+"\n\n" != strings.TrimPrefix(later, "data: ") {
				t.Fatalf("upstream frame %q, want %q", got, later)
			}
			h.publish(t, "/p", "live.late", `{"n":2}`)
			if got := typeOf(t, s.next(t)); got != "live.late" {
				t.Fatalf("got %s, want live.late", got)
			}
		})
	}
}

// Under load from both sides, every frame arrives whole (the client checks
// that each chunk is exactly one frame) and each side's frames in order.
func TestMergedStreamKeepsFramesWholeUnderLoad(t *testing.T) {
	const n = 300
	h, feeds := feedHarness(t, sse.Options{Heartbeat: time.Hour}, nil)
	feed, s := openMerged(t, h, feeds, "/event?directory=/p")
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			pad := strings.Repeat("u", (i*997)%20000)
			feed.send(upstream("/event", "evt_up", "up", fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad)))
		}
	})
	wg.Go(func() {
		for i := range n {
			pad := strings.Repeat("b", (i*991)%20000)
			m := sse.Message{Directory: "/p", Event: sse.Event{Type: "bus", Properties: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad))}}
			if err := h.b.Publish(context.Background(), m); err != nil {
				t.Error(err)
				return
			}
		}
	})
	next := map[string]int{}
	for range 2 * n {
		var e struct {
			Type       string `json:"type"`
			Properties struct {
				I int `json:"i"`
			} `json:"properties"`
		}
		f := s.next(t)
		if err := json.Unmarshal([]byte(f), &e); err != nil {
			t.Fatalf("frame %.100q…: %v", f, err)
		}
		if e.Properties.I != next[e.Type] {
			t.Fatalf("%s frame %d, want %d", e.Type, e.Properties.I, next[e.Type])
		}
		next[e.Type]++
	}
	wg.Wait()
	if next["up"] != n || next["bus"] != n {
		t.Fatalf("got %v", next)
	}
}

// When the feed ends or fails (upstream's stream dropped), the client gets
// what was queued, then the response ends cleanly, so it reconnects; the
// feed is closed and the stream is gone.
func TestFeedEndEndsTheStream(t *testing.T) {
	for _, end := range []error{io.EOF, errors.New("upstream reset")} {
		t.Run(end.Error(), func(t *testing.T) {
			h, feeds := feedHarness(t, sse.Options{Heartbeat: time.Hour}, nil)
			feed, s := openMerged(t, h, feeds, "/global/event")
			h.publish(t, "/p", "bus", `{}`)
			feed.send(upstream("/global/event", "evt_up1", "up", `{}`))
			feed.end(end)
			for _, want := range []string{"bus", "up"} {
				if got := typeOf(t, s.next(t)); got != want {
					t.Fatalf("got %s, want %s", got, want)
				}
			}
			if err := s.waitEnd(t); err != nil {
				t.Fatalf("stream ended with %v, want its last chunk", err)
			}
			feed.waitClosed(t)
			h.waitSubscribers(t, 0)
		})
	}
}

// When the client goes away, the feed is closed (its upstream request
// cancelled) and the stream is gone.
func TestClientLeavingClosesTheFeed(t *testing.T) {
	h, feeds := feedHarness(t, sse.Options{Heartbeat: time.Hour}, nil)
	feed, s := openMerged(t, h, feeds, "/event")
	s.close()
	feed.waitClosed(t)
	h.waitSubscribers(t, 0)
}

// When the broker closes, a merged stream ends cleanly and its feed is
// closed before Close returns.
func TestBrokerCloseClosesTheFeed(t *testing.T) {
	h, feeds := feedHarness(t, sse.Options{Heartbeat: time.Hour}, nil)
	feed, s := openMerged(t, h, feeds, "/event")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := h.b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-feed.closed:
	default:
		t.Fatal("Close returned with the feed open")
	}
	if err := s.waitEnd(t); err != nil {
		t.Fatalf("stream ended with %v, want its last chunk", err)
	}
}

// A feed that fails before its first frame (upstream did not connect)
// gets the stream refused with ErrFeed and nothing written, so the caller
// can answer; the feed is closed. So is the feed of a stream the broker
// refuses.
func TestFeedFailingBeforeItsFirstFrameRefusesTheStream(t *testing.T) {
	h, feeds := feedHarness(t, sse.Options{Heartbeat: time.Hour}, nil)
	opened := openAsync(t, h, "/event")
	feed := await(t, feeds, "no feed")
	feed.end(errors.New("upstream answered 502"))
	s := await(t, opened, "stream not opened")
	if s == nil {
		t.FailNow()
	}
	if !strings.Contains(s.status, " 503 ") {
		t.Fatalf("status %q, want the harness's answer to a refusal", s.status)
	}
	if err := h.refusal(t); !errors.Is(err, sse.ErrFeed) || !strings.Contains(err.Error(), "502") {
		t.Fatalf("refused with %v, want ErrFeed wrapping the feed's error", err)
	}
	feed.waitClosed(t)
	h.waitSubscribers(t, 0)

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := h.b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	refused := newTestFeed()
	r := httptest.NewRequest(http.MethodGet, "/event", nil)
	if err := h.b.ServeEventMerged(newMemWriter(func([]byte) {}), r, "", sse.Standard, nil, refused); !errors.Is(err, sse.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	refused.waitClosed(t)
}

// bubbleBroker is a broker for one synctest bubble, closed at its end.
func bubbleBroker(t *testing.T, opts sse.Options) *sse.Broker {
	t.Helper()
	b, err := sse.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	return b
}

// serveMerged runs ServeEventMerged (or ServeGlobalMerged for global) on
// w until the handler returns; its error comes on the channel then.
func serveMerged(ctx context.Context, b *sse.Broker, w http.ResponseWriter, global bool, feed sse.Feed) <-chan error {
	done := make(chan error, 1)
	go func() {
		if global {
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/global/event", nil)
			done <- b.ServeGlobalMerged(w, r, sse.Standard, nil, feed)
			return
		}
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event", nil)
		done <- b.ServeEventMerged(w, r, "", sse.Standard, nil, feed)
	}()
	return done
}

// A client that leaves while upstream has not connected yet: the handler
// returns ErrGone with nothing written, and the feed is closed; so it is
// when the client leaves later (a stream served through its handler).
func TestClientLeavingClosesTheFeedOfAHandlerStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bubbleBroker(t, sse.Options{Heartbeat: time.Hour})

		ctx, cancel := context.WithCancel(context.Background())
		var rec recorder
		feed := newTestFeed()
		done := serveMerged(ctx, b, newMemWriter(rec.add), false, feed)
		synctest.Wait()
		cancel()
		if err := await(t, done, "the handler never returned"); !errors.Is(err, sse.ErrGone) {
			t.Fatalf("handler returned %v, want ErrGone", err)
		}
		feed.waitClosed(t)
		if got := rec.get(); len(got) != 0 {
			t.Fatalf("written: %q", got)
		}

		ctx, cancel = context.WithCancel(context.Background())
		feed = newTestFeed()
		done = serveMerged(ctx, b, newMemWriter(rec.add), true, feed)
		feed.send(upstream("/global/event", "evt_up0", "server.connected", `{}`))
		synctest.Wait()
		if got := rec.get(); len(got) != 1 {
			t.Fatalf("written: %q, want upstream's first frame", got)
		}
		cancel()
		if err := await(t, done, "the handler never returned"); err != nil {
			t.Fatalf("handler returned %v", err)
		}
		feed.waitClosed(t)
		if n := b.Subscribers(); n != 0 {
			t.Fatalf("%d subscribers", n)
		}
	})
}

// The broker's heartbeats reach a merged stream on its own period, as they
// reach a plain one beside it, besides the feed's frames. When the feed
// ends, the handler of a stream it serves returns.
func TestBrokerHeartbeatsOnAMergedStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bubbleBroker(t, sse.Options{Heartbeat: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var plain, merged recorder
		plainDone := make(chan struct{})
		go func() {
			defer close(plainDone)
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event", nil)
			b.ServeEvent(newMemWriter(plain.add), r, "", sse.Standard, nil)
		}()
		feed := newTestFeed()
		done := serveMerged(ctx, b, newMemWriter(merged.add), false, feed)
		feed.send(upstream("/event", "evt_up0", "server.connected", `{}`))
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		feed.send(upstream("/event", "evt_up1", "server.heartbeat", `{}`))
		time.Sleep(2000 * time.Millisecond)
		synctest.Wait()
		if got := plain.get(); len(got) != 4 || !strings.Contains(got[3], "server.heartbeat") {
			t.Fatalf("plain stream: %q, want server.connected and 3 heartbeats", got)
		}
		got := merged.get()
		var ours, theirs int
		for _, f := range got {
			switch {
			case strings.Contains(f, "evt_up1"):
				theirs++
			case strings.Contains(f, "server.heartbeat"):
				ours++
			}
		}
		if len(got) != 5 || !strings.Contains(got[0], "evt_up0") || ours != 3 || theirs != 1 {
			t.Fatalf("merged stream: %q, want upstream's first frame, 3 heartbeats of the broker's and upstream's own", got)
		}
		feed.end(io.EOF)
		if err := await(t, done, "the handler never returned"); err != nil {
			t.Fatalf("handler returned %v", err)
		}
		feed.waitClosed(t)
		cancel()
		await(t, plainDone, "the plain stream's handler never returned")
	})
}

// A client that does not keep up with the feed is cut off by the feed's
// volume alone, at once (not at the write timeout), as it would be by
// the broker's: the feed is closed, the handler returns, and a stream
// beside it goes on.
func TestSlowClientIsCutOffByTheFeedsVolume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bubbleBroker(t, sse.Options{Heartbeat: time.Hour, QueueLength: 8, WriteTimeout: time.Hour})
		left := make(chan struct{}, 2)
		b.SetHooks(nil, func() { left <- struct{}{} })

		var other recorder
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		otherDone := make(chan struct{})
		go func() {
			defer close(otherDone)
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event", nil)
			b.ServeEvent(newMemWriter(other.add), r, "", sse.Standard, nil)
		}()

		g := newGateWriter(true) // never reads
		feed := newTestFeed()
		done := serveMerged(context.Background(), b, g, false, feed)
		feed.send(upstream("/event", "evt_up0", "server.connected", `{}`))
		synctest.Wait()
		start := time.Now()
		for i := range 20 {
			feed.send(upstream("/event", "evt_up", "up", fmt.Sprintf(`{"i":%d}`, i)))
		}
		await(t, left, "the slow client was never cut off")
		if d := time.Since(start); d != 0 {
			t.Fatalf("cut off after %v, want at once", d)
		}
		if err := await(t, done, "the handler never returned"); err != nil {
			t.Fatalf("handler returned %v", err)
		}
		feed.waitClosed(t)
		if st := b.Stats(); st.CutOff != 1 || st.Subscribers != 1 {
			t.Fatalf("stats %+v, want one cut off, one left", st)
		}
		if err := b.Publish(context.Background(), sse.Message{Event: sse.Event{Type: "still", Properties: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := other.get(); len(got) != 2 || !strings.Contains(got[1], `"still"`) {
			t.Fatalf("the other stream got %q", got)
		}
		cancel()
		await(t, otherDone, "the other stream's handler never returned")
	})
}

// A feed frame that does not end with a blank line would run into the
// next frame on the client: the stream is cut off instead, and the feed
// closed.
func TestBrokenFeedFrameCutsTheStreamOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bubbleBroker(t, sse.Options{Heartbeat: time.Hour})
		var rec recorder
		feed := newTestFeed()
		done := serveMerged(context.Background(), b, newMemWriter(rec.add), false, feed)
		feed.send(upstream("/event", "evt_up0", "server.connected", `{}`))
		synctest.Wait()
		feed.send("", "data: {}\n")
		if err := await(t, done, "the stream goes on after a broken frame"); err != nil {
			t.Fatalf("handler returned %v", err)
		}
		feed.waitClosed(t)
		if got := rec.get(); len(got) != 1 {
			t.Fatalf("written: %q", got)
		}
		if st := b.Stats(); st.CutOff != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Frames written to a merged stream are those of both sides, in the
// order they were queued, whatever the interleaving: forced here by
// sending from the feed and publishing alternately, each step settled.
func TestMergedStreamInterleavesInQueueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bubbleBroker(t, sse.Options{Heartbeat: time.Hour})
		var rec recorder
		feed := newTestFeed()
		ctx, cancel := context.WithCancel(context.Background())
		done := serveMerged(ctx, b, newMemWriter(rec.add), false, feed)
		synctest.Wait()
		// Published before upstream connected: after the first frame.
		if err := b.Publish(context.Background(), sse.Message{Event: sse.Event{Type: "bus0", Properties: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		feed.send(upstream("/event", "evt_up0", "server.connected", `{}`))
		synctest.Wait()
		for i := 1; i <= 3; i++ {
			feed.send(upstream("/event", "evt_up", fmt.Sprintf("up%d", i), `{}`))
			synctest.Wait()
			if err := b.Publish(context.Background(), sse.Message{Event: sse.Event{Type: fmt.Sprintf("bus%d", i), Properties: json.RawMessage(`{}`)}}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		var types []string
		for _, f := range rec.get() {
			types = append(types, typeOf(t, strings.TrimSuffix(strings.TrimPrefix(f, "data: "), "\n\n")))
		}
		want := []string{"server.connected", "bus0", "up1", "bus1", "up2", "bus2", "up3", "bus3"}
		if !slices.Equal(types, want) {
			t.Fatalf("got %q, want %q", types, want)
		}
		cancel()
		await(t, done, "the handler never returned")
		feed.waitClosed(t)
	})
}

// A feed that ends right after its first frame (upstream connected, then
// dropped), before the handler looks for that frame, still starts the
// stream: the client gets that frame, then the end, and reconnects; it is
// never refused as if the broker were closing.
func TestFeedEndingRightAfterItsFirstFrame(t *testing.T) {
	for range 20 { // the handler's select sees the first frame and the end at once: it must not pick by chance
		synctest.Test(t, func(t *testing.T) {
			b := bubbleBroker(t, sse.Options{Heartbeat: time.Hour})
			pumped := make(chan struct{})
			b.SetPumpHook(func() { <-pumped })
			var rec recorder
			feed := newTestFeed()
			feed.send(upstream("/event", "evt_up0", "server.connected", `{}`))
			feed.end(io.EOF)
			done := serveMerged(context.Background(), b, newMemWriter(rec.add), false, feed)
			synctest.Wait() // the pump read both and ended the stream
			close(pumped)
			if err := await(t, done, "the handler never returned"); err != nil {
				t.Fatalf("handler returned %v", err)
			}
			if got := rec.get(); len(got) != 1 || !strings.Contains(got[0], "evt_up0") {
				t.Fatalf("written: %q", got)
			}
			feed.waitClosed(t)
		})
	}
}

// Every refusal closes the feed: the broker owns it from the call on.
func TestRefusedMergedStreamsCloseTheirFeeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := bubbleBroker(t, sse.Options{Heartbeat: time.Hour, MaxScopes: 1})
		r := httptest.NewRequest(http.MethodGet, "/event", nil)

		feed := newTestFeed()
		if err := b.ServeEventMerged(noFlush{newMemWriter(func([]byte) {})}, r, "", sse.Standard, nil, feed); !errors.Is(err, sse.ErrCannotFlush) {
			t.Fatalf("without Flush: %v", err)
		}
		feed.waitClosed(t)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		first := newTestFeed()
		first.send(upstream("/event", "evt_up0", "server.connected", `{}`))
		done := serveMerged(ctx, b, newMemWriter(func([]byte) {}), false, first) // no directory: not one of MaxScopes
		synctest.Wait()
		dirA := newTestFeed()
		dirA.send(upstream("/event", "evt_up0", "server.connected", `{}`))
		doneA := make(chan error, 1)
		go func() {
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event?directory=/a", nil)
			doneA <- b.ServeEventMerged(newMemWriter(func([]byte) {}), r, "/a", sse.Standard, nil, dirA)
		}()
		synctest.Wait()
		dirB := newTestFeed()
		if err := b.ServeEventMerged(newMemWriter(func([]byte) {}), r, "/b", sse.Standard, nil, dirB); !errors.Is(err, sse.ErrTooManyScopes) {
			t.Fatalf("a second directory: %v", err)
		}
		dirB.waitClosed(t)
		cancel()
		for _, c := range []<-chan error{done, doneA} {
			if err := await(t, c, "the handler never returned"); err != nil {
				t.Fatal(err)
			}
		}
		first.waitClosed(t)
		dirA.waitClosed(t)
	})
}
