package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// fanoutSubscribers is the audience the issue asks for.
const fanoutSubscribers = 1000

// deliveryTimeout bounds one round; far beyond any healthy delivery.
const deliveryTimeout = 30 * time.Second

// BenchmarkFanout1000 measures how long a question.asked takes to reach 1 000
// /event subscribers. Each iteration, one publisher asks one question
// (POST /elicitations); every subscriber notes when the frame arrives. Times
// count from the moment the create request is sent: both servers announce a
// question before they answer its create request, so subscribers often see
// the frame before the publisher sees the 201, and timing from the 201 would
// go negative. ms/create (the publisher's own wait) is reported beside them.
//
// Metrics, averaged over iterations: ms/last-delivery (until the last
// subscriber has the frame), ms/p50-delivery (the median subscriber); over
// every (subscriber, iteration) sample: ms/p99-delivery. On the baseline's
// line: questiond/baseline of ms/last-delivery, and p99-questiond/baseline
// of ms/p99-delivery.
func BenchmarkFanout1000(b *testing.B) {
	last := make(map[string]float64)
	p99 := make(map[string]float64)
	for _, srv := range servers {
		var f *fanout
		b.Run(srv.name, func(b *testing.B) {
			if f == nil {
				f = newFanout(b, srv.start, fanoutSubscribers)
			}
			var total delivery
			samples := make([]time.Duration, 0, b.N*fanoutSubscribers)
			b.ResetTimer()
			for range b.N {
				d, err := f.publish()
				if err != nil {
					b.Fatal(err)
				}
				total.add(d)
				samples = append(samples, d.seen...)
			}
			b.StopTimer()
			n := float64(b.N)
			slices.Sort(samples)
			b.ReportMetric(ms(total.last)/n, "ms/last-delivery")
			b.ReportMetric(ms(total.p50)/n, "ms/p50-delivery")
			b.ReportMetric(ms(percentile(samples, 0.99)), "ms/p99-delivery")
			b.ReportMetric(ms(total.create)/n, "ms/create")
			last[srv.name] = ms(total.last) / n
			p99[srv.name] = ms(percentile(samples, 0.99))
			reportRatio(b, srv.name, last)
			reportRatioAs(b, srv.name, p99, "p99-")
		})
		if f != nil {
			f.close()
		}
	}
	b.Logf("last of %d subscribers: questiond %.2f ms, baseline %.2f ms, questiond/baseline %.3f",
		fanoutSubscribers, last["questiond"], last["baseline"], last["questiond"]/last["baseline"])
	b.Logf("p99 of %d subscribers: questiond %.2f ms, baseline %.2f ms, questiond/baseline %.3f",
		fanoutSubscribers, p99["questiond"], p99["baseline"], p99["questiond"]/p99["baseline"])
}

// percentile is the nearest-rank p-quantile (0 < p ≤ 1) of sorted samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// TestFanout runs the benchmark's rounds against each server with a few
// subscribers, so its code stays exercised under -race.
func TestFanout(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			f := newFanout(t, srv.start, 5)
			defer f.close()
			for range 3 {
				d, err := f.publish()
				if err != nil {
					t.Fatal(err)
				}
				if d.p50 > d.last || d.last <= 0 || len(d.seen) != 5 {
					t.Fatalf("delivery times out of order: %+v", d)
				}
				if p := percentile(d.seen, 0.99); p != d.last {
					t.Fatalf("p99 of 5 samples is %v, want the last, %v", p, d.last)
				}
			}
		})
	}
}

// delivery is how one question reached the subscribers, counted from the
// moment its create request was sent.
type delivery struct {
	create time.Duration   // until the publisher had the 201
	p50    time.Duration   // until half the subscribers had the frame
	last   time.Duration   // until every subscriber had it
	seen   []time.Duration // when each subscriber had it, in order
}

func (d *delivery) add(o delivery) {
	d.create += o.create
	d.p50 += o.p50
	d.last += o.last
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fanout is one server with its subscribers, kept across the repeated runs
// of one sub-benchmark.
type fanout struct {
	srv     *server
	client  *client
	ctx     context.Context // ended by the first failure or by close
	fail    context.CancelCauseFunc
	streams []*eventStream
	readers sync.WaitGroup
	current atomic.Pointer[round] // the question being delivered
}

// round collects one question's arrival times, one slot per subscriber.
type round struct {
	sent time.Time
	seen []time.Duration
	got  atomic.Int64
	all  chan struct{} // closed when the last subscriber has the frame
}

func newFanout(tb testing.TB, start func(testing.TB, int) *server, subscribers int) *fanout {
	tb.Helper()
	srv := start(tb, sse.DefaultQueueLength) // one frame per question: the default never fills
	ctx, fail := context.WithCancelCause(context.Background())
	f := &fanout{srv: srv, client: newClient(srv.url, subscribers+16), ctx: ctx, fail: fail}
	for i := range subscribers {
		s, err := f.client.subscribe(ctx)
		if err != nil {
			f.close()
			tb.Fatalf("subscriber %d of %d: %v", i+1, subscribers, err)
		}
		f.streams = append(f.streams, s)
		f.readers.Go(func() { f.read(i, s) })
	}
	return f
}

// read notes when subscriber i sees each question.asked. It only looks for
// the type, never decodes: a thousand decodes per question would be client
// work on the servers' two cores, the same on both sides, and would hide the
// difference being measured.
func (f *fanout) read(i int, s *eventStream) {
	for {
		frame, err := s.next()
		if err != nil {
			f.fail(fmt.Errorf("subscriber %d: the event stream ended: %w", i+1, err))
			return
		}
		if !bytes.Contains(frame, typeAsked) {
			continue
		}
		r := f.current.Load()
		if r == nil {
			f.fail(fmt.Errorf("subscriber %d: question.asked before any question was asked: %s", i+1, frame))
			return
		}
		r.seen[i] = time.Since(r.sent)
		if r.got.Add(1) == int64(len(r.seen)) {
			close(r.all)
		}
	}
}

// publish asks one question and waits until every subscriber has seen it.
func (f *fanout) publish() (delivery, error) {
	r := &round{seen: make([]time.Duration, len(f.streams)), all: make(chan struct{})}
	r.sent = time.Now()
	f.current.Store(r)
	if _, err := f.client.ask(f.ctx); err != nil {
		return delivery{}, err
	}
	created := time.Since(r.sent)
	timeout := time.NewTimer(deliveryTimeout)
	defer timeout.Stop()
	select {
	case <-r.all:
	case <-f.ctx.Done():
		return delivery{}, context.Cause(f.ctx)
	case <-timeout.C:
		return delivery{}, fmt.Errorf("only %d of %d subscribers saw the question within %v", r.got.Load(), len(r.seen), deliveryTimeout)
	}
	slices.Sort(r.seen)
	return delivery{create: created, p50: r.seen[len(r.seen)/2], last: r.seen[len(r.seen)-1], seen: r.seen}, nil
}

func (f *fanout) close() {
	f.fail(errStopped)
	for _, s := range f.streams {
		s.close()
	}
	f.readers.Wait()
	f.srv.stop()
	f.client.close()
}
