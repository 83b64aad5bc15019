package workload_test

import (
	"testing"
	"time"

	"github.com/questiond/questiond/bench/workload"
)

func TestQuantileIsTheNearestRank(t *testing.T) {
	latencies := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for q, want := range map[float64]time.Duration{0: 1, 0.5: 6, 0.99: 10, 1: 10} {
		if got := workload.Quantile(latencies, q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got := workload.Quantile(nil, 0.5); got != 0 {
		t.Errorf("Quantile of none = %v, want 0", got)
	}
	if latencies[0] != 5 {
		t.Error("Quantile sorted its argument in place")
	}
}
