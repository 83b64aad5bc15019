package pending

import (
	"os"
	"time"
)

// Test-only access to the hooks and internals, for the external test package.

// SetOnSettleEntered parks or observes every ending before it takes a lock.
func (m *Store) SetOnSettleEntered(hook func(id string, how Ending)) { m.onSettleEntered = hook }

// SetOnWaitEntered parks or observes Wait after its lookup, before it blocks.
func (m *Store) SetOnWaitEntered(hook func(id string)) { m.onWaitEntered = hook }

// Held reports how many questions the store still holds, pending or ended.
func (m *Store) Held() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.entries)
}

// Commits counts b's group commits so far; the difference between two calls
// counts the commits in between.
func (b *Bolt) Commits() int { return int(b.commits.Load()) }

// OpenBoltReadOnlyFD opens the file the way OpenBolt does, except that the
// descriptor bbolt writes through is opened read-only: every write fails
// with EBADF, for root too, as on a file system remounted read-only.
func OpenBoltReadOnlyFD(path string, opts BoltOptions) (*Bolt, error) {
	opts.openFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		return os.OpenFile(name, flag&^(os.O_RDWR|os.O_WRONLY|os.O_CREATE), perm)
	}
	return OpenBolt(path, opts)
}

// SetOnQueued observes every write once it is queued for a commit.
func (b *Bolt) SetOnQueued(hook func()) { b.onQueued = hook }

// HoldWriter takes the commit lead's lock, so that commits wait, until
// release is called.
func (b *Bolt) HoldWriter() (release func()) {
	b.commitMu.Lock()
	return b.commitMu.Unlock
}

// WithSmallWAL makes the write-ahead log's segments segment bytes and its
// idle checkpoint come after idle, so that a short test switches segments
// and checkpoints many times.
func WithSmallWAL(opts BoltOptions, segment int64, idle time.Duration) BoltOptions {
	opts.walSegment, opts.idleCheckpoint = segment, idle
	return opts
}

// CopyStoreFiles copies a bbolt store and its write-ahead log elsewhere, as a crash would leave them.
var CopyStoreFiles = copyStoreFiles

// EvictionDelay is how long the janitor waits to delete a batch of
// evicted records that is not yet full.
const EvictionDelay = evictionDelay
