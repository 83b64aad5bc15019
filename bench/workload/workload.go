// Package workload is what questiond's benchmarks (package bench) and the
// side-by-side comparison (bench/cmd/sidebyside) have in common: the form
// every agent asks, the operator's reply to it, and how a run's latencies
// are summed up.
package workload

import (
	"slices"
	"time"
)

// SeedForm is the seed RFC's two-question form every agent asks, and
// SeedAnswers the operator's reply to what it becomes, as labels.
var (
	SeedForm = []byte(`{"message":"Diagnose the machine","requestedSchema":{"type":"object",` +
		`"properties":{"model":{"type":"string","title":"Model","description":"Equipment model?","enum":["SY215C","SY365H"]},` +
		`"symptoms":{"type":"array","title":"Symptoms","description":"Select symptoms",` +
		`"items":{"type":"string","enum":["Black smoke","Low power","Overheating"]}}},"required":["model"]}}`)
	SeedAnswers = []byte(`{"answers":[["SY215C"],["Black smoke"]]}`)
)

// Quantile is the q-quantile of latencies (nearest rank), 0 with none.
func Quantile(latencies []time.Duration, q float64) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
