// Package metrics keeps questiond's Prometheus metrics — questions, event
// streams, store commits, HTTP requests, MCP and limits — on a registry of
// its own, with label values drawn only from small fixed sets.
package metrics

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/questiond/questiond/internal/pending"
)

// Metrics counts what questiond does. It hears of questions asked and ended
// (Asked, Ended) and of requests, tool calls and refusals (Request,
// ToolCall, Refused), as a listener of the question service and the HTTP
// API's Meter;
// Journal times store commits and Observe adds what is read at scrape time.
// Counting costs an atomic add, with no lock, on every path that is hot.
type Metrics struct {
	reg *prometheus.Registry

	asked    prometheus.Counter
	ended    map[pending.Ending]prometheus.Counter  // every known Ending, made by New: read only
	waited   map[pending.Ending]prometheus.Observer // likewise
	endedVec *prometheus.CounterVec                 // for an ending questiond does not know yet
	waitVec  *prometheus.HistogramVec

	requestVec *prometheus.CounterVec
	requests   sync.Map // requestKey → prometheus.Counter: lock-free once a series exists
	toolCalls  *prometheus.CounterVec
	refusals   *prometheus.CounterVec
	commits    map[string]prometheus.Observer // by journal operation
	commitVec  *prometheus.HistogramVec       // registered by Journal: no store commits without one
	timing     sync.Once
}

// endings are every way a question ends; anything else counts as "other".
var endings = []pending.Ending{pending.EndReplied, pending.EndRejected, pending.EndTimeout,
	pending.EndWithdrawn, pending.EndDisconnected, pending.EndShutdown}

const endingOther = "other"

// Bucket bounds, in seconds. People answer in seconds to hours; a commit
// takes from a memory write to a slow disk's sync.
var (
	waitBuckets   = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}
	commitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
)

// New returns metrics registered on a fresh registry, with the Go runtime's
// and the process's collectors. limits name every limit whose refusals are
// counted: each shows, at 0, from the start.
func New(limits ...string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		asked: prometheus.NewCounter(prometheus.CounterOpts{Name: "questiond_questions_asked_total",
			Help: "Questions asked since start (any route: POST /elicitations, POST /elicit, MCP)."}),
		ended:  map[pending.Ending]prometheus.Counter{},
		waited: map[pending.Ending]prometheus.Observer{},
		requestVec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "questiond_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern (never a raw path) and status."},
			[]string{"method", "route", "status"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "questiond_mcp_tool_calls_total",
			Help: "MCP question tool calls returned, by tool and result (accept, decline, cancel, error)."},
			[]string{"tool", "result"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "questiond_limit_refusals_total",
			Help: "Requests refused by a limit (rate, pending, pending_per_agent, streams, mcp_streams, mcp_streams_per_agent, mcp_sessions, mcp_sessions_per_agent)."},
			[]string{"limit"}),
		commits: map[string]prometheus.Observer{},
	}
	m.endedVec = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "questiond_questions_ended_total",
		Help: "Questions ended since start, by ending (replied, rejected, timeout, withdrawn, disconnected, shutdown)."},
		[]string{"ending"})
	m.waitVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "questiond_question_wait_seconds",
		Help: "Time from a question being asked to its ending, by ending.", Buckets: waitBuckets},
		[]string{"ending"})
	for _, e := range endings {
		m.ended[e] = m.endedVec.WithLabelValues(string(e))
		m.waited[e] = m.waitVec.WithLabelValues(string(e))
	}
	m.commitVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "questiond_store_commit_seconds",
		Help:    "Time a question store commit took to be durable (group commits included), by operation (put, delete).",
		Buckets: commitBuckets}, []string{"op"})
	for _, op := range []string{opPut, opDelete} {
		m.commits[op] = m.commitVec.WithLabelValues(op)
	}
	for _, limit := range limits {
		m.refusals.WithLabelValues(limit) // every limit shows, at 0, from the start
	}
	m.reg.MustRegister(m.asked, m.endedVec, m.waitVec, m.requestVec, m.toolCalls, m.refusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Build adds questiond_build_info: one series, always 1, whose labels say
// which build runs on which store, so dashboards can join it and tell a
// rolling upgrade's replicas apart. Call it once, before the first scrape.
func (m *Metrics) Build(version, store string) {
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "questiond_build_info",
		Help:        "Always 1; the labels say which questiond version, built with which Go, runs on which store (memory, bolt, postgres).",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version(), "store": store}})
	info.Set(1)
	m.reg.MustRegister(info)
}

// Handler serves the metrics in the Prometheus text format (or OpenMetrics,
// when the scraper asks for it). Errors collecting are logged by whoever
// serves it: here they give 500.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Asked counts a question asked.
func (m *Metrics) Asked(*pending.Question) { m.asked.Inc() }

// Ended counts a question ended and how long it waited.
func (m *Metrics) Ended(q *pending.Question) {
	end := time.Now()
	var ending pending.Ending
	if q.Ended != nil {
		ending = q.Ended.Ending
		if !q.Ended.At.IsZero() {
			end = q.Ended.At
		}
	}
	count, wait := m.ended[ending], m.waited[ending]
	if count == nil { // a new ending: one more series, not one per question
		count, wait = m.endedVec.WithLabelValues(endingOther), m.waitVec.WithLabelValues(endingOther)
	}
	count.Inc()
	if !q.CreatedAt.IsZero() {
		wait.Observe(max(end.Sub(q.CreatedAt), 0).Seconds())
	}
}

type requestKey struct {
	method, route string
	status        int
}

// Request counts an HTTP request. Its labels come from the router (see
// httpapi.Meter), so the series are as many as routes × methods × statuses
// questiond answers with.
func (m *Metrics) Request(method, route string, status int) {
	k := requestKey{method, route, status}
	c, ok := m.requests.Load(k)
	if !ok {
		c, _ = m.requests.LoadOrStore(k, m.requestVec.WithLabelValues(method, route, strconv.Itoa(status)))
	}
	c.(prometheus.Counter).Inc()
}

// ToolCall counts an MCP tool call that returned.
func (m *Metrics) ToolCall(tool, result string) { m.toolCalls.WithLabelValues(tool, result).Inc() }

// Refused counts a request a limit refused.
func (m *Metrics) Refused(limit string) { m.refusals.WithLabelValues(limit).Inc() }
