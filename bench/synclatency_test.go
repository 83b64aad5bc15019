package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// syncSamples is how many synced writes measureSyncLatency times.
const syncSamples = 200

// measureSyncLatency returns the mean time to overwrite 4 KiB at a fixed
// offset of a preallocated file in dir and sync its data: what one commit
// to questiond's write-ahead log costs at best on that disk. A durable round
// trip is two commits, so 1/(2 × this) round trips per second is the floor
// a lone agent can reach.
func measureSyncLatency(tb testing.TB, dir string) time.Duration {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "synclatency"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	if _, err := f.WriteAt(make([]byte, 1<<20), 0); err != nil {
		tb.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	// The mean, not the median: a rate is a mean, and the disk's slow
	// syncs slow the round trips too.
	start := time.Now()
	for i := range syncSamples {
		block[0] = byte(i)
		if _, err := f.WriteAt(block, 64<<10); err != nil {
			tb.Fatal(err)
		}
		if err := datasync(f); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start) / syncSamples
}
