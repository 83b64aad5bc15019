package pending

import (
	"time"
)

// defaultIdleCheckpoint is how long, give or take as long again, the log may
// hold ops without a new commit before the checkpointer applies them to the
// database. Nothing is less durable meanwhile (the log is synced), and a
// segment holds at most walSize of ops, so this only bounds the replay
// after a crash; it is long enough that an idle store does not write to its
// database while another process is being refused its lock.
const defaultIdleCheckpoint = 2 * time.Second

// checkpointer applies sealed segments to the database as soon as they are
// sealed, seals the active one when commits stop for a while, and retries a
// checkpoint or a commit that failed. It runs from OpenBolt until Close.
func (b *Bolt) checkpointer() {
	defer close(b.ckDone)
	tick := time.NewTicker(b.idle)
	defer tick.Stop()
	seen := b.commits.Load()
	for {
		select {
		case <-b.ckStop:
			return
		case <-b.ckKick:
			b.checkpointSealed()
		case <-tick.C:
			b.checkpointSealed() // a retry, if the last one failed
			b.retryFailedCommit()
			if now := b.commits.Load(); now != seen {
				seen = now
				continue
			}
			b.sealIdle()
		}
	}
}

// sealIdle seals the active segment when it holds ops and no commit is
// running; a commit that is running will be followed by another tick.
func (b *Bolt) sealIdle() {
	if !b.commitMu.TryLock() {
		return
	}
	defer b.commitMu.Unlock()
	b.walMu.Lock()
	pending := b.segs[0] != nil && len(b.segs[b.active].ops) > 0 && b.broken == nil
	b.walMu.Unlock()
	if !pending {
		return
	}
	if err := b.seal(false); err != nil {
		b.log.Debug("idle seal failed; the next commit or tick tries again")
	}
}
