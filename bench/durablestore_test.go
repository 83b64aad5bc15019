package bench

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// BenchmarkDurableStoreOneWriter is the durable round trip without HTTP: one
// writer creates a question and settles it, one after the other, on the
// bbolt store with its write-ahead log, beside the disk's sync latency
// measured in the same directory. Two commits per round trip make two syncs
// the floor; store/floor is that floor's time over the measured time (1 =
// nothing but the syncs).
func BenchmarkDurableStoreOneWriter(b *testing.B) {
	dir := b.TempDir()
	sync := measureSyncLatency(b, dir)
	journal, err := pending.OpenBolt(filepath.Join(dir, "questiond.db"), pending.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer journal.Close()
	ctx := context.Background()
	store, err := pending.Open(ctx, pending.Options{Journal: journal})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close(ctx)
	outcome := pending.Outcome{Ending: pending.EndReplied,
		Result:  pending.Result{Action: pending.ActionAccept, Content: map[string]any{"pick": "Red"}},
		Answers: [][]string{{"Red"}}}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		id := "que_bench" + strconv.Itoa(i)
		q := &pending.Question{ID: id, SessionID: "ses_bench", Message: "Pick one", Schema: []byte(`{"type":"object"}`)}
		if err := store.Create(ctx, q); err != nil {
			b.Fatal(err)
		}
		if _, err := store.Settle(ctx, id, outcome); err != nil {
			b.Fatal(err)
		}
	}
	perRoundTrip := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(sync.Microseconds()), "sync-µs")
	b.ReportMetric(float64(2*sync)/float64(perRoundTrip), "store/floor")
}
