package pending

import (
	"fmt"
	"os"
	"path/filepath"
)

// walSegment is one of the log's two files. Only the commit leader writes
// it; ops and sealed are guarded by Bolt.walMu.
type walSegment struct {
	path  string
	f     *os.File
	size  int64
	epoch uint64 // of its header; 0 before the first header is written
	off   int64  // where the next frame goes
	// stale: frames of a use already checkpointed may follow the header;
	// a new header (a new epoch) must cut them off before more are written.
	stale bool

	ops    []walOp // logged here and not yet in the database
	sealed bool    // full or idle: the checkpointer is to apply ops
}

// walPath is the file of segment i of the database at dbPath.
func walPath(dbPath string, i int) string { return fmt.Sprintf("%s-wal.%d", dbPath, i) }

// openSegment opens (creating it when missing) segment i's file, written
// with zeroes to at least size bytes and synced, with its directory.
func (b *Bolt) openSegment(i int) (*walSegment, error) {
	path := walPath(b.path, i)
	f, err := b.openFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := max(info.Size(), b.walSize)
	if info.Size() < size {
		// Written, not fallocated: an unwritten extent would turn the first
		// write to each block into a metadata change for every sync to flush.
		zeroes := make([]byte, 64<<10)
		for off := info.Size(); off < size; off += int64(len(zeroes)) {
			chunk := zeroes[:min(int64(len(zeroes)), size-off)]
			if _, err := f.WriteAt(chunk, off); err != nil {
				f.Close()
				return nil, err
			}
		}
		if err := b.sync(f, true); err != nil {
			f.Close()
			return nil, err
		}
		if err := b.syncDir(); err != nil {
			f.Close()
			return nil, err
		}
	}
	// Whatever it held was replayed into the database when it was opened.
	return &walSegment{path: path, f: f, size: size, off: walHeaderSize, stale: true}, nil
}

// sync flushes f unless syncs are off; full also flushes its size.
func (b *Bolt) sync(f *os.File, full bool) error {
	switch {
	case b.noSync:
		return nil
	case full:
		return f.Sync()
	default:
		return datasync(f)
	}
}

func (b *Bolt) syncDir() error {
	if b.noSync {
		return nil
	}
	dir, err := os.Open(filepath.Dir(b.path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// renew gives seg a new header with the next epoch, synced, so that the
// frames it held are never read again; it then takes frames from the start.
func (b *Bolt) renew(seg *walSegment) error {
	b.epoch++
	if _, err := seg.f.WriteAt(encodeHeader(b.epoch), 0); err != nil {
		return err
	}
	if err := b.sync(seg.f, false); err != nil {
		return err
	}
	seg.epoch, seg.off, seg.stale = b.epoch, walHeaderSize, false
	return nil
}

// writeFrame writes frame at seg's tail and syncs it.
func (b *Bolt) writeFrame(seg *walSegment, frame []byte) error {
	if _, err := seg.f.WriteAt(frame, seg.off); err != nil {
		return err
	}
	if err := b.sync(seg.f, false); err != nil {
		return err
	}
	seg.off += int64(len(frame))
	return nil
}
