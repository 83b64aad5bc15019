package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// row is one line of the table: a figure every server has.
type row struct {
	label  string
	format string // of one server's figure
	value  func(*measurement) float64
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// median is the median over rounds of one figure of a load case.
func median(rounds []loadResult, figure func(loadResult) float64) float64 {
	if len(rounds) == 0 {
		return 0
	}
	values := make([]float64, len(rounds))
	for i, r := range rounds {
		values[i] = figure(r)
	}
	slices.Sort(values)
	if len(values)%2 == 1 {
		return values[len(values)/2]
	}
	return (values[len(values)/2-1] + values[len(values)/2]) / 2
}

func loadRows(label string, pick func(*measurement) []loadResult) []row {
	return []row{
		{label + ", req/s", "%.0f", func(m *measurement) float64 { return median(pick(m), loadResult.perSecond) }},
		{label + ", p50 ms", "%.2f", func(m *measurement) float64 {
			return median(pick(m), func(r loadResult) float64 { return ms(r.quantile(0.5)) })
		}},
		{label + ", p99 ms", "%.2f", func(m *measurement) float64 {
			return median(pick(m), func(r loadResult) float64 { return ms(r.quantile(0.99)) })
		}},
	}
}

func rows(cfg *config) []row {
	var all []row
	all = append(all, loadRows("`GET /question`, 0 pending", func(m *measurement) []loadResult { return m.empty })...)
	all = append(all, loadRows(fmt.Sprintf("`GET /question`, %d pending", cfg.pending), func(m *measurement) []loadResult { return m.full })...)
	all = append(all, loadRows(fmt.Sprintf("reply (each of %d once)", cfg.pending), func(m *measurement) []loadResult { return m.reply })...)
	all = append(all, loadRows("reply to an unknown id (404)", func(m *measurement) []loadResult { return m.unknown })...)
	return append(all,
		row{"RSS idle, MiB", "%.1f", func(m *measurement) float64 { return float64(m.idleKiB) / 1024 }},
		row{"RSS per idle `/event` subscriber, KiB", "%.1f", func(m *measurement) float64 { return m.perSubscriber }},
		row{"RSS per pending question, KiB", "%.1f", func(m *measurement) float64 { return m.perPending }},
	)
}

// table is the run as Markdown: each server's figures, questiond's ratios
// to OpenCode and to the bare server, and then what else a reader needs
// (body sizes, failures).
func table(cfg *config, results map[string]*measurement) string {
	var names []string
	for _, name := range cfg.servers {
		if results[name] != nil {
			names = append(names, name)
		}
	}
	type ratio struct{ of, to string }
	var ratios []ratio
	for _, of := range []string{"questiond", "questiond-bolt"} {
		for _, to := range []string{"opencode", "bare"} {
			if results[of] != nil && results[to] != nil {
				ratios = append(ratios, ratio{of, to})
			}
		}
	}
	var b strings.Builder
	b.WriteString("| case |")
	for _, name := range names {
		fmt.Fprintf(&b, " %s |", name)
	}
	for _, r := range ratios {
		fmt.Fprintf(&b, " %s / %s |", r.of, r.to)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---:|", len(names)+len(ratios)))
	b.WriteString("\n")
	for _, r := range rows(cfg) {
		fmt.Fprintf(&b, "| %s |", r.label)
		for _, name := range names {
			fmt.Fprintf(&b, " "+r.format+" |", r.value(results[name]))
		}
		for _, q := range ratios {
			of, to := r.value(results[q.of]), r.value(results[q.to])
			if to == 0 {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " %.2f |", of/to)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nRatios are questiond's figure divided by the other's: above 1 is better for req/s, below 1 is better for latency and memory.\n")
	for _, name := range names {
		m := results[name]
		fmt.Fprintf(&b, "\n- %s: `GET /question` body %d B with %d pending; %d subscribers held", name, len(m.pendingList), cfg.pending, m.subscribed)
		for _, c := range []struct {
			label  string
			rounds []loadResult
		}{{"GET /question, 0 pending", m.empty}, {"GET /question, pending", m.full}, {"reply", m.reply}, {"reply to unknown", m.unknown}} {
			failed, total, first := 0, 0, ""
			for _, r := range c.rounds {
				failed, total = failed+r.failed, total+r.failed+r.ok
				first = cmp.Or(first, r.firstError)
			}
			if failed > 0 {
				fmt.Fprintf(&b, "; **%s: %d of %d requests failed**, the first with: %s", c.label, failed, total, first)
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}
