package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// agentCounts are the concurrencies the issue asks for.
var agentCounts = []int{1, 64, 512}

// operatorQueue is the event queue both servers get in this benchmark. Each
// agent has at most one question in flight, worth two frames (asked, replied)
// on the operator's stream, so with this queue no server can cut the
// operator off. With a queue of 256 frames (the default until commit 7fa4f97
// raised it to 1 024) both servers did so at 512 agents on two cores: the
// operator's one reader goroutine is starved of CPU by 512 agents, 512 reply
// workers and the server itself.
func operatorQueue(agents int) int { return max(2*agents, sse.DefaultQueueLength) }

// BenchmarkRoundTrip measures whole round trips per second: an agent asks
// (POST /elicitations), an operator watching one /event stream sees
// question.asked and replies (POST /question/{id}/reply), and the agent's
// long-poll (GET /elicitations/{id}?wait=) returns the accepted result.
// Sub-benchmarks alternate questiond and the baseline at each concurrency so
// the two sides of a ratio run moments apart; each baseline line carries the
// ratio questiond/baseline of roundtrips/s.
//
// With one agent, the questiond-bolt line also carries the disk's sync
// latency, measured just before and after its run on the same file system
// (measureSyncLatency), and bolt/floor: its rate over the 1/(2 × sync)
// round trips per second that two synced commits per round trip allow.
func BenchmarkRoundTrip(b *testing.B) {
	for _, agents := range agentCounts {
		rates := make(map[string]float64)
		var syncLatency time.Duration
		for _, srv := range servers {
			var fx *roundTripFixture
			b.Run(fmt.Sprintf("%s/agents=%d", srv.name, agents), func(b *testing.B) {
				if fx == nil {
					fx = newRoundTripFixture(b, srv.start, agents)
				}
				measureSync := srv.name == "questiond-bolt" && agents == 1
				var syncBefore time.Duration
				if measureSync {
					syncBefore = measureSyncLatency(b, b.TempDir())
				}
				rate := timeRoundTrips(b, fx.roundTrips(agents))
				rates[srv.name] = rate
				reportRatio(b, srv.name, rates)
				if measureSync {
					// Just before and just after, as the disk's latency drifts
					// on a shared machine.
					syncLatency = (syncBefore + measureSyncLatency(b, b.TempDir())) / 2
					b.ReportMetric(float64(syncLatency.Microseconds()), "sync-µs")
					b.ReportMetric(rate*2*syncLatency.Seconds(), "bolt/floor")
				}
			})
			if fx != nil {
				fx.close()
			}
		}
		b.Logf("agents=%d: questiond %.0f, questiond-bolt %.0f, baseline %.0f roundtrips/s; questiond/baseline %.3f, questiond-bolt/baseline %.3f, bolt/memory %.3f",
			agents, rates["questiond"], rates["questiond-bolt"], rates["baseline"], rates["questiond"]/rates["baseline"],
			rates["questiond-bolt"]/rates["baseline"], rates["questiond-bolt"]/rates["questiond"])
		if syncLatency > 0 {
			floor := 1 / (2 * syncLatency.Seconds())
			b.Logf("agents=%d: sync %v (mean of 2×%d), floor %.0f roundtrips/s, questiond-bolt/floor %.3f",
				agents, syncLatency, syncSamples, floor, rates["questiond-bolt"]/floor)
		}
	}
}

// reportRatio adds questiond/baseline to the baseline's line, once both
// sides have run.
func reportRatio(b *testing.B, name string, values map[string]float64) {
	reportRatioAs(b, name, values, "")
}

// reportRatioAs is reportRatio for a second metric on the same lines: its
// ratios' units start with prefix.
func reportRatioAs(b *testing.B, name string, values map[string]float64, prefix string) {
	if name != "baseline" || values["baseline"] <= 0 {
		return
	}
	if values["questiond"] > 0 {
		b.ReportMetric(values["questiond"]/values["baseline"], prefix+"questiond/baseline")
	}
	if values["questiond-bolt"] > 0 {
		b.ReportMetric(values["questiond-bolt"]/values["baseline"], prefix+"questiond-bolt/baseline")
	}
}

// TestRoundTrip runs the benchmark's exchange a few times against each
// server, with concurrent agents, so its code stays exercised under -race.
func TestRoundTrip(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			fx := newRoundTripFixture(t, srv.start, 4)
			defer fx.close()
			if err := runRoundTrips(fx.op, fx.client, 4, 20); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// roundTripFixture is one server with its client and operator, kept across
// the repeated runs of one sub-benchmark.
type roundTripFixture struct {
	srv    *server
	client *client
	op     *operator
}

func newRoundTripFixture(tb testing.TB, start func(testing.TB, int) *server, agents int) *roundTripFixture {
	tb.Helper()
	srv := start(tb, operatorQueue(agents))
	// Each agent holds one connection, each reply worker another.
	c := newClient(srv.url, 2*agents+16)
	spread(c, srv.replicas)
	op, err := startOperator(context.Background(), c, agents)
	if err != nil {
		srv.stop()
		c.close()
		tb.Fatal(err)
	}
	fx := &roundTripFixture{srv: srv, client: c, op: op}
	// Two rounds with every agent busy open the connections the timed runs
	// reuse, so they measure requests, not dialling.
	if err := runRoundTrips(op, c, agents, 2*agents); err != nil {
		fx.close()
		tb.Fatalf("warming up: %v", err)
	}
	return fx
}

func (fx *roundTripFixture) close() {
	fx.op.stop()
	fx.srv.stop()
	fx.client.close()
}

// runRoundTrips makes n round trips, agents at a time, and returns the first
// failure of an agent or of the operator.
func runRoundTrips(op *operator, c *client, agents, n int) error {
	return runAgents(op, agents, n, func(ctx context.Context, _ int) error { return roundTrip(ctx, c) })
}

// runAgents makes n round trips with agents goroutines, each passing its own
// index to roundTrip, and returns the first failure of an agent or of the
// operator.
func runAgents(op *operator, agents, n int, roundTrip func(ctx context.Context, agent int) error) error {
	var started atomic.Int64
	var wg sync.WaitGroup
	for agent := range agents {
		wg.Go(func() {
			for started.Add(1) <= int64(n) {
				if err := roundTrip(op.ctx, agent); err != nil {
					op.fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if op.ctx.Err() != nil {
		return context.Cause(op.ctx)
	}
	return nil
}

// roundTrips is runRoundTrips on fx with agents at a time, for
// timeRoundTrips.
func (fx *roundTripFixture) roundTrips(agents int) func(n int) error {
	return func(n int) error { return runRoundTrips(fx.op, fx.client, agents, n) }
}

// timeRoundTrips times run of b.N round trips (the timer reset first),
// reports round trips per second and returns them.
func timeRoundTrips(b *testing.B, run func(n int) error) float64 {
	b.ResetTimer()
	if err := run(b.N); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "roundtrips/s")
	return rate
}

// roundTrip is one agent's question: ask, then long-poll for the answer the
// operator gives in between.
func roundTrip(ctx context.Context, c *client) error {
	id, err := c.ask(ctx)
	if err != nil {
		return err
	}
	return c.collect(ctx, id)
}

// errStopped ends an operator that was asked to stop.
var errStopped = errors.New("operator stopped")

// operator holds one /event subscription and answers every question it sees
// asked. Its replies run in a pool as large as the number of agents, so the
// operator never limits how many round trips are in flight.
type operator struct {
	ctx     context.Context // ended by the first failure, so agents stop waiting
	fail    context.CancelCauseFunc
	stream  *eventStream
	running sync.WaitGroup
}

func startOperator(parent context.Context, c *client, workers int) (*operator, error) {
	ctx, fail := context.WithCancelCause(parent)
	stream, err := c.subscribe(ctx)
	if err != nil {
		fail(err)
		return nil, fmt.Errorf("operator: %w", err)
	}
	op := &operator{ctx: ctx, fail: fail, stream: stream}
	asked := make(chan string, workers)
	op.running.Go(func() {
		defer close(asked)
		for {
			frame, err := stream.next()
			if err != nil {
				fail(fmt.Errorf("operator: the event stream ended: %w", err))
				return
			}
			if !bytes.Contains(frame, typeAsked) {
				continue
			}
			id, err := askedID(frame)
			if err != nil {
				fail(fmt.Errorf("operator: %w", err))
				return
			}
			asked <- id
		}
	})
	for range workers {
		op.running.Go(func() {
			for id := range asked {
				if err := c.reply(ctx, id); err != nil {
					fail(fmt.Errorf("operator: %w", err))
				}
			}
		})
	}
	return op, nil
}

// stop ends the subscription and waits for every reply in flight.
func (op *operator) stop() {
	op.fail(errStopped)
	op.stream.close()
	op.running.Wait()
}
