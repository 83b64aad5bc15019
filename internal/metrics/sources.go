package metrics

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// Sources are read when Prometheus scrapes, never per event: each takes a
// lock or walks a list. A nil field leaves its metrics out.
type Sources struct {
	// Pending counts the pending questions (pending.Store.Count).
	Pending func(ctx context.Context, f pending.Filter) (int, error)
	// Events returns the event broker's counts (sse.Broker.Stats).
	Events func() sse.Stats
	// MCPSessions counts the live MCP sessions (the HTTP API's MCPSessions).
	MCPSessions func() int
	// Conns returns what the connection guard refused or closed
	// (connguard.Guard.Stats).
	Conns func() connguard.Stats
}

// Observe adds the metrics read from src at scrape time. Call it once, when
// the parts exist.
func (m *Metrics) Observe(src Sources) {
	m.reg.MustRegister(&sourceCollector{src: src})
}

var (
	descPending = prometheus.NewDesc("questiond_questions_pending",
		"Questions pending now (no directory label: directories are the agents' to choose, so unbounded).", nil, nil)
	descSubscribers = prometheus.NewDesc("questiond_event_subscribers",
		"Event streams connected now (/event, /global/event).", nil, nil)
	descPublished = prometheus.NewDesc("questiond_events_published_total",
		"Events published since start (question.asked, .replied, .rejected, the console's own), not heartbeats.", nil, nil)
	descCutOff = prometheus.NewDesc("questiond_event_subscribers_cut_off_total",
		"Event subscribers cut off since start: full queue, write timeout, or shutdown's grace over.", nil, nil)
	descMCPSessions = prometheus.NewDesc("questiond_mcp_sessions",
		"MCP sessions live now on /mcp.", nil, nil)
	descConnRefusals = prometheus.NewDesc("questiond_connection_refusals_total",
		"Connections refused or closed, and requests ended, by the connection caps and the body read timeout, by reason ("+
			strings.Join(connguard.Reasons, ", ")+").", []string{"reason"}, nil)
)

// sourceCollector reads Sources at scrape time, each once.
type sourceCollector struct{ src Sources }

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.src.Pending != nil {
		ch <- descPending
	}
	if c.src.Events != nil {
		ch <- descSubscribers
		ch <- descPublished
		ch <- descCutOff
	}
	if c.src.MCPSessions != nil {
		ch <- descMCPSessions
	}
	if c.src.Conns != nil {
		ch <- descConnRefusals
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Pending != nil {
		if n, err := c.src.Pending(context.Background(), pending.Filter{}); err == nil {
			ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(n))
		} else {
			ch <- prometheus.NewInvalidMetric(descPending, err)
		}
	}
	if c.src.Events != nil {
		st := c.src.Events()
		ch <- prometheus.MustNewConstMetric(descSubscribers, prometheus.GaugeValue, float64(st.Subscribers))
		ch <- prometheus.MustNewConstMetric(descPublished, prometheus.CounterValue, float64(st.Published))
		ch <- prometheus.MustNewConstMetric(descCutOff, prometheus.CounterValue, float64(st.CutOff))
	}
	if c.src.MCPSessions != nil {
		ch <- prometheus.MustNewConstMetric(descMCPSessions, prometheus.GaugeValue, float64(c.src.MCPSessions()))
	}
	if c.src.Conns != nil {
		st := c.src.Conns()
		for _, reason := range connguard.Reasons { // every reason, at 0 from the start
			ch <- prometheus.MustNewConstMetric(descConnRefusals, prometheus.CounterValue, float64(st[reason]), reason)
		}
	}
}
