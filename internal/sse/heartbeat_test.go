package sse_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// recorder collects the frames of one in-process subscriber.
type recorder struct {
	mu     sync.Mutex
	frames []string
}

func (r *recorder) add(f []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frames = append(r.frames, string(f))
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.frames...)
}

func TestHeartbeatEveryPeriodOnEveryStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := sse.New(sse.Options{}) // the default period, in the bubble's fake time
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var event, global recorder
		var wg sync.WaitGroup
		wg.Go(func() {
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event?directory=/d", nil)
			b.ServeEvent(newMemWriter(event.add), r, "/d", sse.Standard, nil)
		})
		wg.Go(func() {
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/global/event", nil)
			b.ServeGlobal(newMemWriter(global.add), r, sse.Standard, nil)
		})

		expect := func(n int) {
			t.Helper()
			synctest.Wait()
			for _, rec := range []*recorder{&event, &global} {
				if got := rec.get(); len(got) != n {
					t.Fatalf("at %v: %d frames %q, want %d", time.Since(start), len(got), got, n)
				}
			}
		}
		expect(1) // server.connected
		time.Sleep(sse.DefaultHeartbeat - time.Millisecond)
		expect(1)
		time.Sleep(time.Millisecond)
		expect(2)
		time.Sleep(2 * sse.DefaultHeartbeat)
		expect(4)

		seen := map[string]bool{}
		for i, f := range event.get()[1:] {
			if !strings.HasPrefix(f, `data: {"id":"evt_`) || !strings.HasSuffix(f, `","type":"server.heartbeat","properties":{}}`+"\n\n") {
				t.Fatalf("heartbeat %d: %q", i, f)
			}
			seen[f] = true
			want := `data: {"payload":` + strings.TrimPrefix(strings.TrimSuffix(f, "\n\n"), "data: ") + "}\n\n"
			if g := global.get()[i+1]; g != want {
				t.Fatalf("global heartbeat %d: %q, want %q", i, g, want)
			}
		}
		if len(seen) != 3 {
			t.Fatalf("heartbeats reuse ids: %q", event.get())
		}

		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		cancel()
		time.Sleep(10 * sse.DefaultHeartbeat)
		expect(4) // stopped with Close
	})
}

// start is the bubble's epoch: synctest starts every bubble at the same
// instant, so messages can say how far a test got.
var start = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func TestHeartbeatOverHTTP(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: sse.Options{Heartbeat: 20 * time.Millisecond}})
	e := dialStream(t, h, "/event")
	g := dialStream(t, h, "/global/event")
	e.next(t)
	g.next(t)
	ids := map[string]bool{}
	for range 3 {
		if ev := e.nextEvent(t); ev.Type != "server.heartbeat" || string(ev.Properties) != "{}" || !evtID.MatchString(ev.ID) {
			t.Fatalf("got %+v", ev)
		} else {
			ids[ev.ID] = true
		}
		if gl := g.nextGlobal(t); gl.Payload.Type != "server.heartbeat" || gl.Directory != nil || gl.Project != nil {
			t.Fatalf("global got %+v", gl)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("ids %v", ids)
	}
}

// A subscriber with frames still queued skips a heartbeat rather than being
// cut off by it, even when its queue is at the bound; once idle again it
// gets the next one.
func TestBusySubscriberSkipsAHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = time.Second
		b, err := sse.New(sse.Options{Heartbeat: period, QueueLength: 1, WriteTimeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		w := newGateWriter(true)
		done := serveGated(t.Context(), b, w, "/d")
		synctest.Wait() // writing server.connected, which the client does not take
		if err := b.Publish(context.Background(), msg("/d", "queued")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(period) // a beat, while the queue is full
		synctest.Wait()
		if n := b.Subscribers(); n != 1 {
			t.Fatalf("%d subscribers: a heartbeat cut the busy one off", n)
		}
		w.setShut(false)
		synctest.Wait()
		time.Sleep(period)
		synctest.Wait()
		if got, want := w.types(t), []string{"server.connected", "queued", "server.heartbeat"}; !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}
