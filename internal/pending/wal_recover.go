package pending

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"go.uber.org/zap"
)

// replayLog applies what the write-ahead log holds to the database, oldest
// segment first, in one transaction. It runs in OpenBolt, before anything
// reads the database; the segment files are only read.
func (b *Bolt) replayLog() error {
	type segment struct {
		path   string
		epoch  uint64
		frames walFrames
	}
	var found []segment
	for i := range 2 {
		path := walPath(b.path, i)
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("%w: read the write-ahead log: %w", ErrUnavailable, err)
		}
		epoch, err := decodeHeader(data)
		if err != nil {
			return &walRefusal{path: path, err: err}
		}
		if epoch == 0 {
			continue
		}
		frames := readFrames(data[walHeaderSize:], epoch)
		if frames.tail != "" {
			// What a crash during a commit leaves; that commit was never
			// acknowledged.
			b.log.Info("ignored the end of the write-ahead log", zap.String("path", path),
				zap.Int("offset", walHeaderSize+frames.end), zap.String("found", frames.tail))
		}
		found = append(found, segment{path: path, epoch: epoch, frames: frames})
		b.epoch = max(b.epoch, epoch)
	}
	slices.SortFunc(found, func(x, y segment) int { return cmp.Compare(x.epoch, y.epoch) })
	var ops []walOp
	frames := 0
	for i, s := range found {
		for _, f := range s.frames.ops {
			ops = append(ops, f...)
		}
		frames += len(s.frames.ops)
		if s.frames.damaged && i+1 < len(found) {
			// A segment is only left for the next once its frames are all
			// synced, so this is damage, not a crash: replaying what follows
			// would build a state that never was. Stop at what was.
			b.log.Warn("the write-ahead log is damaged; later segments are not replayed", zap.String("path", s.path),
				zap.Int("offset", walHeaderSize+s.frames.end), zap.String("found", s.frames.tail), zap.String("skipped", found[i+1].path))
			break
		}
	}
	if len(ops) == 0 {
		return nil
	}
	start := time.Now()
	if err := b.apply(ops); err != nil {
		return fmt.Errorf("%w: replay the write-ahead log: %w", ErrUnavailable, err)
	}
	b.log.Info("replayed the write-ahead log", zap.String("path", b.path), zap.Int("frames", frames),
		zap.Int("ops", len(ops)), zap.Duration("took", time.Since(start)))
	return nil
}

// walRefusal: a segment file that this build did not write. Like a
// database that is not ours, it is left as it is.
type walRefusal struct {
	path string
	err  error
}

func (r *walRefusal) Error() string {
	return fmt.Sprintf("open question store: write-ahead log %s: %v; nothing was changed: move it aside if it is not questiond's, but note that it may hold the latest committed questions", r.path, r.err)
}

func (r *walRefusal) Unwrap() []error { return []error{ErrCorrupt, r.err} }
