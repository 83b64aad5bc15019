package bench

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testserver"
)

// storeSystems are what BenchmarkStores compares in one run: questiond on
// each store, PostgreSQL with one replica and with three. Replicas run in
// this process (each a whole daemon with its own pool and tailer) on the
// throwaway PostgreSQL server pgtest starts, which shares the machine.
var storeSystems = []struct {
	name     string
	replicas int // PostgreSQL replicas; 0: start is the system
	start    func(tb testing.TB, queueLength int) *server
}{
	{"memory", 0, startQuestiond},
	{"bolt", 0, startQuestiondBolt},
	{"postgres-1", 1, nil},
	{"postgres-3", 3, nil},
}

// replicasOn returns a start function for n replicas on a fresh database
// that lives as long as tb: the parent benchmark's, since a sub-benchmark's
// fixture outlives its first run.
func replicasOn(tb testing.TB, n int) func(testing.TB, int) *server {
	dbURL := pgtest.Database(tb)
	return func(tb testing.TB, queueLength int) *server { return startReplicas(tb, dbURL, queueLength, n) }
}

// startReplicas starts n questiond replicas on the database at dbURL. The
// server's clients spread their requests over the replicas, one after
// another, as a round-robin load balancer would: an agent asks through one,
// the operator replies through the next, the agent collects through a
// third.
func startReplicas(tb testing.TB, dbURL string, queueLength, n int) *server {
	tb.Helper()
	var urls []string
	var stops []func() error
	for range n {
		q, err := testserver.Start(testserver.Config{
			Events:      sse.Options{QueueLength: queueLength},
			DatabaseURL: dbURL,
			Logger:      benchLogger(),
		})
		if err != nil {
			tb.Fatal(err)
		}
		urls = append(urls, q.URL)
		stops = append(stops, q.Stop)
	}
	stop := func() {
		for _, s := range stops {
			if err := s(); err != nil {
				tb.Errorf("replica: %v", err)
			}
		}
	}
	return &server{name: fmt.Sprintf("postgres-%d", n), url: urls[0], replicas: urls, stop: stop}
}

// roundRobin sends each request to the next replica.
type roundRobin struct {
	next  http.RoundTripper
	hosts []string
	turn  atomic.Uint64
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	host := rr.hosts[rr.turn.Add(1)%uint64(len(rr.hosts))]
	req = req.Clone(req.Context())
	req.URL.Host, req.Host = host, host
	return rr.next.RoundTrip(req)
}

// spread makes c send its requests round-robin over replicas.
func spread(c *client, replicas []string) {
	if len(replicas) < 2 {
		return
	}
	hosts := make([]string, len(replicas))
	for i, r := range replicas {
		u, err := url.Parse(r)
		if err != nil {
			panic(err)
		}
		hosts[i] = u.Host
	}
	c.http.Transport = &roundRobin{next: c.transport, hosts: hosts}
}

// BenchmarkStores measures round trips per second (as BenchmarkRoundTrip)
// on each store, all in one run, with the ratios the issue asks for:
// postgres-1 against bolt, postgres-3 against postgres-1.
func BenchmarkStores(b *testing.B) {
	for _, agents := range agentCounts {
		rates := make(map[string]float64)
		for _, sys := range storeSystems {
			start := sys.start
			if sys.replicas > 0 {
				start = replicasOn(b, sys.replicas)
			}
			var fx *roundTripFixture
			b.Run(fmt.Sprintf("%s/agents=%d", sys.name, agents), func(b *testing.B) {
				if fx == nil {
					fx = newRoundTripFixture(b, start, agents)
				}
				rate := timeRoundTrips(b, fx.roundTrips(agents))
				rates[sys.name] = rate
				switch sys.name {
				case "postgres-1":
					b.ReportMetric(rate/rates["bolt"], "postgres-1/bolt")
				case "postgres-3":
					b.ReportMetric(rate/rates["postgres-1"], "postgres-3/postgres-1")
				}
			})
			if fx != nil {
				fx.close()
			}
		}
		b.Logf("agents=%d: memory %.0f, bolt %.0f, postgres-1 %.0f, postgres-3 %.0f roundtrips/s; postgres-1/bolt %.2f, postgres-3/postgres-1 %.2f",
			agents, rates["memory"], rates["bolt"], rates["postgres-1"], rates["postgres-3"],
			rates["postgres-1"]/rates["bolt"], rates["postgres-3"]/rates["postgres-1"])
	}
}

// TestStoresRoundTrip runs a few round trips on each store, three
// PostgreSQL replicas included, so the benchmark's code stays exercised.
func TestStoresRoundTrip(t *testing.T) {
	for _, sys := range storeSystems[2:] {
		t.Run(sys.name, func(t *testing.T) {
			fx := newRoundTripFixture(t, replicasOn(t, sys.replicas), 4)
			defer fx.close()
			if err := runRoundTrips(fx.op, fx.client, 4, 20); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func benchLogger() *zap.Logger {
	if os.Getenv("BENCH_DEBUG") == "" {
		return zap.NewNop()
	}
	l, _ := zap.NewDevelopment(zap.IncreaseLevel(zap.InfoLevel))
	return l
}
