package pending

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	bbolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// errClosed is what a write gets once Close has begun.
var errClosed = errors.New("the store is closed")

// commit logs group's ops in one frame and sends each write the result.
// The lead is held, so nothing else writes the log meanwhile.
func (b *Bolt) commit(group []*write) {
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	count := 0
	for _, w := range group {
		count += len(w.ops)
	}
	ops := make([]walOp, 0, count)
	flush := false
	kept := group[:0]
	for _, w := range group {
		if err := checkOps(w.ops); err != nil {
			w.done <- writeResult{err: err} // fails alone; the rest commit
			continue
		}
		ops = append(ops, w.ops...)
		flush = flush || w.flush
		kept = append(kept, w)
	}
	err := b.commitOps(ops, flush)
	b.noteCommit(err)
	for _, w := range kept {
		w.done <- writeResult{err: err}
	}
}

// noteCommit records a commit's outcome for readiness, and logs when
// commits start or stop failing.
func (b *Bolt) noteCommit(err error) {
	if errors.Is(err, errClosed) {
		return
	}
	b.walMu.Lock()
	was := b.commitErr
	b.commitErr = err
	b.walMu.Unlock()
	switch {
	case err != nil && was == nil:
		b.log.Warn("commits fail; not ready until the write-ahead log can take them again (retried every few seconds)", zap.String("path", b.path), zap.Error(err))
	case err == nil && was != nil:
		b.log.Info("commits work again", zap.String("path", b.path))
	}
}

// retryFailedCommit makes the log ready for the next commit after one
// failed, as that commit would (cutting off a log that failed to write,
// creating or renewing the active segment), so that readiness recovers when
// the cause is gone, without waiting for a client to try a write while
// probes keep clients away. It commits nothing.
func (b *Bolt) retryFailedCommit() {
	b.walMu.Lock()
	failed := b.commitErr != nil
	b.walMu.Unlock()
	if !failed || !b.commitMu.TryLock() {
		return // a commit under way will record its own outcome
	}
	defer b.commitMu.Unlock()
	err := b.commitOps(nil, false)
	if err == nil {
		_, err = b.room(0) // never seals: a segment always has room for nothing
	}
	b.noteCommit(err)
}

// checkOps refuses ops that bbolt would refuse when they are checkpointed,
// so that the log never holds a change the database cannot take.
func checkOps(ops []walOp) error {
	for _, op := range ops {
		if err := op.check(); err != nil {
			return fmt.Errorf("%s %q: %w", cutID(string(op.bucket)), cutID(string(op.key)), err)
		}
	}
	return nil
}

func (b *Bolt) commitOps(ops []walOp, flush bool) error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return errClosed
	}
	if b.brokenErr() != nil {
		// A frame that failed to write or sync may still reach the disk:
		// put what was acknowledged into the database and cut the log's
		// frames off before logging anything more.
		if err := b.checkpointAll(true); err != nil {
			return err
		}
	}
	if len(ops) > 0 {
		if err := b.logOps(ops); err != nil {
			return err
		}
	}
	if flush {
		return b.checkpointAll(false)
	}
	return nil
}

// logOps makes ops durable: in one frame of the log, or, when they are too
// many for a segment, in the database after everything logged before them.
func (b *Bolt) logOps(ops []walOp) error {
	need := int64(opsFrameSize(ops))
	if need > b.walSize-walHeaderSize {
		if err := b.checkpointAll(true); err != nil {
			return err
		}
		if err := b.apply(ops); err != nil {
			return err
		}
		b.commits.Add(1)
		return nil
	}
	seg, err := b.room(need)
	if err != nil {
		return err
	}
	if err := b.writeFrame(seg, encodeOpsFrame(seg.epoch, ops)); err != nil {
		b.walMu.Lock()
		b.broken = err
		b.walMu.Unlock()
		return fmt.Errorf("write-ahead log %s: %w", seg.path, err)
	}
	b.walMu.Lock()
	seg.ops = append(seg.ops, ops...)
	b.walMu.Unlock()
	b.commits.Add(1)
	if seg.off > seg.size/2 {
		if err := b.seal(false); err != nil {
			b.log.Warn("could not start a new log segment; will try again", zap.String("path", b.path), zap.Error(err))
		}
	}
	return nil
}

// room returns the active segment with space for a frame of need bytes,
// switching segments when it is full.
func (b *Bolt) room(need int64) (*walSegment, error) {
	if b.segs[0] == nil {
		var segs [2]*walSegment
		for i := range segs {
			seg, err := b.openSegment(i)
			if err != nil {
				closeSegments(segs[:i])
				return nil, fmt.Errorf("create the write-ahead log: %w", err)
			}
			segs[i] = seg
		}
		// Both, not only the first to be written: what the last run left
		// (replayed when opened, maybe with a torn tail) must not precede
		// this run's frames, or a damaged tail would stop a later replay
		// before them. Until both are renewed, the next commit starts over.
		for _, seg := range segs {
			if err := b.renew(seg); err != nil {
				closeSegments(segs[:])
				return nil, fmt.Errorf("write-ahead log %s: %w", seg.path, err)
			}
		}
		b.walMu.Lock()
		b.segs = segs
		b.walMu.Unlock()
	}
	seg := b.segs[b.active]
	if seg.stale {
		if err := b.renew(seg); err != nil {
			return nil, fmt.Errorf("write-ahead log %s: %w", seg.path, err)
		}
	}
	if seg.off+need <= seg.size {
		return seg, nil
	}
	if err := b.seal(true); err != nil {
		return nil, err
	}
	return b.segs[b.active], nil
}

// seal hands the active segment to the checkpointer and makes the other one
// active, once the checkpointer has applied what that one held; without
// wait, it gives up instead of waiting.
func (b *Bolt) seal(wait bool) error {
	cur, next := b.segs[b.active], b.segs[1-b.active]
	b.walMu.Lock()
	for next.sealed {
		if !wait {
			b.walMu.Unlock()
			return nil
		}
		if b.ckErr != nil {
			err := b.ckErr
			b.walMu.Unlock()
			return fmt.Errorf("the write-ahead log is full and its checkpoint failed: %w", err)
		}
		b.walCond.Wait()
	}
	b.walMu.Unlock()
	if err := b.renew(next); err != nil {
		return fmt.Errorf("write-ahead log %s: %w", next.path, err)
	}
	b.walMu.Lock()
	cur.sealed = len(cur.ops) > 0
	cur.stale = true
	b.active = 1 - b.active
	b.walMu.Unlock()
	select {
	case b.ckKick <- struct{}{}:
	default:
	}
	return nil
}

// checkpointSealed applies the sealed segment's ops to the database, after
// which the segment may be reused. It runs on the checkpointer.
func (b *Bolt) checkpointSealed() {
	b.ckMu.Lock()
	defer b.ckMu.Unlock()
	b.walMu.Lock()
	var seg *walSegment
	for _, s := range b.segs {
		if s != nil && s.sealed {
			seg = s
		}
	}
	b.walMu.Unlock()
	if seg == nil {
		return
	}
	var err error
	if hook := b.onCheckpoint; hook != nil {
		err = hook()
	}
	if err == nil {
		err = b.apply(seg.ops) // only the lead appends, and never to a sealed segment
	}
	b.walMu.Lock()
	defer b.walMu.Unlock()
	defer b.walCond.Broadcast()
	if err != nil {
		if b.ckErr == nil {
			b.log.Warn("checkpoint failed; writes go on into the write-ahead log while it has room, and it is retried", zap.String("path", b.path), zap.Error(err))
		}
		b.ckErr = err
		return
	}
	if b.ckErr != nil {
		b.log.Info("checkpoint succeeded again", zap.String("path", b.path))
	}
	b.ckErr = nil
	seg.sealed, seg.ops = false, nil
}

// checkpointAll applies every logged op to the database in one transaction.
// With renew, it then cuts off the frames of both segments, so that nothing
// can be replayed over what is written to the database directly next.
func (b *Bolt) checkpointAll(renew bool) error {
	b.ckMu.Lock()
	defer b.ckMu.Unlock()
	if b.segs[0] == nil {
		return nil
	}
	b.walMu.Lock()
	var ops []walOp
	if older := b.segs[1-b.active]; older.sealed {
		ops = append(ops, older.ops...)
	}
	ops = append(ops, b.segs[b.active].ops...)
	b.walMu.Unlock()
	if len(ops) > 0 {
		if err := b.apply(ops); err != nil {
			return err
		}
	}
	b.walMu.Lock()
	for _, s := range b.segs {
		s.sealed, s.ops = false, nil
	}
	b.ckErr = nil
	b.walCond.Broadcast()
	b.walMu.Unlock()
	if !renew {
		return nil
	}
	for _, s := range b.segs {
		if err := b.renew(s); err != nil {
			return fmt.Errorf("write-ahead log %s: %w", s.path, err)
		}
	}
	b.walMu.Lock()
	b.broken = nil
	b.walMu.Unlock()
	return nil
}

// apply makes ops in one synced database transaction.
func (b *Bolt) apply(ops []walOp) error {
	return guardCorruption(func() error {
		return b.db.Update(func(tx *bbolt.Tx) error {
			for _, op := range ops {
				bucket := tx.Bucket(op.bucket)
				if bucket == nil {
					if op.del {
						continue
					}
					var err error
					if bucket, err = tx.CreateBucket(op.bucket); err != nil {
						return fmt.Errorf("bucket %q: %w", cutID(string(op.bucket)), err)
					}
				}
				var err error
				if op.del {
					err = bucket.Delete(op.key)
				} else {
					err = bucket.Put(op.key, op.value)
				}
				if err != nil {
					return fmt.Errorf("%s %q: %w", op.bucket, cutID(string(op.key)), err)
				}
			}
			return nil
		})
	})
}

func (b *Bolt) brokenErr() error {
	b.walMu.Lock()
	defer b.walMu.Unlock()
	return b.broken
}

func closeSegments(segs []*walSegment) {
	for _, s := range segs {
		if s != nil {
			_ = s.f.Close()
		}
	}
}

// closeLog checkpoints everything and, when that worked, removes the
// segment files: a store closed cleanly has all its data in the database.
func (b *Bolt) closeLog() error {
	err := b.checkpointAll(false)
	segs := b.segs
	closeSegments(segs[:])
	if err != nil {
		return err
	}
	for i := range segs {
		// Replayed when opened, if not written since.
		path := walPath(b.path, i)
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			// Replaying it again at the next start is harmless: everything in
			// it is already in the database, in the same order.
			b.log.Warn("could not remove the write-ahead log", zap.String("path", path), zap.Error(rmErr))
		}
	}
	return nil
}
