package pending

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bbolt "go.etcd.io/bbolt"
)

// Pinger is a journal that can say whether it can take commits now, for
// readiness probes. A journal that does not implement it is taken to be
// ready whenever it is open.
type Pinger interface {
	// Ping returns nil when the journal answers, or an error wrapping
	// ErrUnavailable. It must be cheap: probes call it every few seconds.
	Ping(ctx context.Context) error
}

// Ping reports whether the store can serve: it is open and its journal, if
// it has one that is a Pinger, answers. A store without a journal is ready
// until it is closed.
func (m *Store) Ping(ctx context.Context) error {
	m.mu.RLock()
	closed := m.closed
	m.mu.RUnlock()
	if closed {
		return fmt.Errorf("ping: %w", ErrClosed)
	}
	if p, ok := m.journal.(Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			return journalError(err)
		}
	}
	return nil
}

// Ping checks that the file is still open and is still the file at its path:
// a file deleted or replaced underneath (a volume unmounted, an operator's
// mistake) would take commits no restart can find; and that the last write
// to the write-ahead log, the last commit, and the last checkpoint of it,
// worked, and, before the first commit, that the log has room. It reads,
// and writes nothing: a probe must not add commits.
func (b *Bolt) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ping %s: %w", b.path, err)
	}
	if err := b.db.View(func(*bbolt.Tx) error { return nil }); err != nil {
		return b.pingFailed(err)
	}
	if err := stillAt(b.opened, b.path); err != nil {
		return b.pingFailed(err)
	}
	b.walMu.Lock()
	broken, ckErr, commitErr, segs := b.broken, b.ckErr, b.commitErr, b.segs
	b.walMu.Unlock()
	if segs[0] == nil { // no commit yet: the first creates the log
		if err := b.roomForLog(); err != nil {
			return b.pingFailed(err)
		}
	}
	for _, seg := range segs {
		if seg == nil {
			continue
		}
		opened, err := seg.f.Stat()
		if err == nil {
			err = stillAt(opened, seg.path)
		}
		if err != nil {
			return b.pingFailed(fmt.Errorf("write-ahead log %s: %w", seg.path, err))
		}
	}
	switch {
	case broken != nil:
		return b.pingFailed(fmt.Errorf("the write-ahead log failed to write: %w", broken))
	case ckErr != nil:
		return b.pingFailed(fmt.Errorf("the write-ahead log cannot be checkpointed: %w", ckErr))
	case commitErr != nil:
		return b.pingFailed(fmt.Errorf("the last commit failed: %w", commitErr))
	}
	return nil
}

// roomForLog checks that the file system has room for the write-ahead log's
// two segments, which the first commit creates at their full size: on a
// full volume every create would fail while the database file itself
// still answers.
func (b *Bolt) roomForLog() error {
	var need int64
	for i := range b.segs {
		need += b.walSize
		if info, err := os.Stat(walPath(b.path, i)); err == nil {
			need -= min(info.Size(), b.walSize) // what is written already stays
		}
	}
	dir := filepath.Dir(b.path)
	if free, ok := freeSpace(dir); ok && free < need {
		return fmt.Errorf("no room for the write-ahead log in %s: %d bytes free, %d needed", dir, free, need)
	}
	return nil
}

// pingFailed wraps err like failed does, without logging: the caller polls,
// and logs a change of readiness once.
func (b *Bolt) pingFailed(err error) error {
	return fmt.Errorf("%s: ping: %w: %w", b.path, ErrUnavailable, err)
}

var _ Pinger = (*Bolt)(nil)

// stillAt reports whether the file opened (as it was when opened) is still
// the file at path.
func stillAt(opened os.FileInfo, path string) error {
	now, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !os.SameFile(opened, now) {
		return errors.New("the file at this path is not the one questiond opened")
	}
	return nil
}
