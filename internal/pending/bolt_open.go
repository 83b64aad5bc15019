package pending

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/defaults"
)

// Errors of OpenBolt. Each names the file; a file that gives ErrCorrupt or
// ErrForeign is left exactly as it was.
var (
	// ErrLocked: another process (a second daemon on the same data
	// directory) holds the file.
	ErrLocked = errors.New("database is in use by another process")
	// ErrCorrupt: bbolt cannot read the file, or its pages are damaged.
	ErrCorrupt = errors.New("database file is corrupt or not a bbolt file")
	// ErrForeign: a valid bbolt file without questiond's format marker, or
	// with a format version this build does not read.
	ErrForeign = errors.New("database file belongs to another program")
)

var (
	bucketQuestions = []byte("questions")
	bucketMeta      = []byte("meta")
	keyFormat       = []byte("format")
)

// formatMarker is stored under meta/format when OpenBolt creates a file.
type formatMarker struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

const (
	formatName    = "questiond"
	formatVersion = 1
)

// OpenBolt opens the journal file at path, creating it (mode 0600, and its
// directory, mode 0700) when it does not exist. An existing file is first
// identified read-only: only an empty file, an empty bbolt database or a
// questiond file is ever opened for writing.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	wait := opts.LockTimeout
	defaults.Fill(&wait, DefaultLockTimeout)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open question store %s: %w: %w", path, ErrUnavailable, err)
	}
	info, err := os.Stat(path)
	switch {
	case err == nil && info.Size() > 0:
		// Opening read-write may write (bbolt rewrites a freelist it finds
		// unsynced), so a file not known to be ours is only read.
		if err := inspectBolt(path, wait, opts.openFile); err != nil {
			return nil, err
		}
	case err == nil, errors.Is(err, fs.ErrNotExist):
		// New, or empty (what a crash while creating it leaves): bbolt
		// initialises it.
	default:
		return nil, fmt.Errorf("open question store %s: %w: %w", path, ErrUnavailable, err)
	}

	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: wait, NoSync: opts.NoSync, OpenFile: opts.openFile})
	if err != nil {
		return nil, openFailure(path, wait, err)
	}
	opened, err := os.Stat(path)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open question store %s: %w: %w", path, ErrUnavailable, err)
	}
	b := &Bolt{
		db: db, path: path, opened: opened, log: log.Named("bolt"), noSync: opts.NoSync, openFile: opts.openFile,
		walSize: opts.walSegment, idle: opts.idleCheckpoint,
		ckKick: make(chan struct{}, 1), ckStop: make(chan struct{}), ckDone: make(chan struct{}),
	}
	if b.openFile == nil {
		b.openFile = os.OpenFile
	}
	defaults.Fill(&b.walSize, defaultWALSegment)
	defaults.Fill(&b.idle, defaultIdleCheckpoint)
	b.walCond = sync.NewCond(&b.walMu)
	if err := guardCorruption(b.prepare); err != nil {
		_ = db.Close()
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrForeign) {
			return nil, refusal(path, err)
		}
		return nil, fmt.Errorf("open question store %s: %w", path, err)
	}
	if err := b.replayLog(); err != nil {
		_ = db.Close()
		var refused *walRefusal
		if errors.As(err, &refused) {
			return nil, err
		}
		return nil, fmt.Errorf("open question store %s: %w", path, err)
	}
	go b.checkpointer()
	return b, nil
}

// inspectBolt opens an existing file read-only and checks that it is a sound
// questiond file, or an empty bbolt database.
func inspectBolt(path string, wait time.Duration, openFile func(string, int, os.FileMode) (*os.File, error)) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: wait, OpenFile: openFile})
	if err != nil {
		return openFailure(path, wait, err)
	}
	defer db.Close()
	err = guardCorruption(func() error {
		return db.View(func(tx *bbolt.Tx) error {
			info, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			if tx.Size() > info.Size() {
				return fmt.Errorf("%w: truncated to %d bytes, its pages need %d", ErrCorrupt, info.Size(), tx.Size())
			}
			if _, err := identify(tx); err != nil {
				return err
			}
			var damage error
			for err := range tx.Check() { // drained to the end: Check's goroutine sends every error
				if damage == nil {
					damage = fmt.Errorf("%w: %w", ErrCorrupt, err)
				}
			}
			return damage
		})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrCorrupt) || errors.Is(err, ErrForeign):
		return refusal(path, err)
	default:
		return fmt.Errorf("open question store %s: %w", path, err)
	}
}

// prepare identifies the file opened read-write and, when it is an empty
// database, writes the format marker and the questions bucket.
func (b *Bolt) prepare() error {
	var empty, complete bool
	err := b.db.View(func(tx *bbolt.Tx) error {
		var err error
		empty, err = identify(tx)
		complete = tx.Bucket(bucketQuestions) != nil
		return err
	})
	if err != nil || (!empty && complete) {
		return err
	}
	marker, err := json.Marshal(formatMarker{Format: formatName, Version: formatVersion})
	if err != nil {
		return err
	}
	err = b.db.Update(func(tx *bbolt.Tx) error {
		if empty {
			meta, err := tx.CreateBucket(bucketMeta)
			if err != nil {
				return err
			}
			if err := meta.Put(keyFormat, marker); err != nil {
				return err
			}
		}
		_, err := tx.CreateBucketIfNotExists(bucketQuestions)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: initialise: %w", ErrUnavailable, err)
	}
	return nil
}

// identify reports whether tx's database is empty (no buckets at all), and
// fails with ErrForeign unless it is empty or carries our format marker.
func identify(tx *bbolt.Tx) (empty bool, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		var names []string
		_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
		if len(names) == 0 {
			return true, nil
		}
		if len(names) > 5 {
			names = append(names[:5], "…")
		}
		return false, fmt.Errorf("%w: it holds the buckets %s but no questiond format marker", ErrForeign, strings.Join(names, ", "))
	}
	var marker formatMarker
	raw := meta.Get(keyFormat)
	if raw == nil || json.Unmarshal(raw, &marker) != nil || marker.Format != formatName {
		return false, fmt.Errorf("%w: its %q bucket holds no questiond format marker", ErrForeign, bucketMeta)
	}
	if marker.Version != formatVersion {
		return false, fmt.Errorf("%w: questiond format version %d, this build reads version %d", ErrForeign, marker.Version, formatVersion)
	}
	return false, nil
}

// openFailure classifies an error from bbolt.Open: a lock timeout, an
// operating-system failure, or a file bbolt cannot read.
func openFailure(path string, wait time.Duration, err error) error {
	var pathErr *fs.PathError
	var errno syscall.Errno
	switch {
	case errors.Is(err, bberrors.ErrTimeout):
		return fmt.Errorf("open question store %s: %w: its lock was still held after %s; is another questiond using this data directory?", path, ErrLocked, wait)
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return fmt.Errorf("open question store %s: %w: %w", path, ErrUnavailable, err)
	default:
		return refusal(path, fmt.Errorf("%w: %w", ErrCorrupt, err))
	}
}

// refusal explains why a file that is not a sound questiond file was not
// opened, and what to do about it.
func refusal(path string, err error) error {
	return fmt.Errorf("open question store %s: %w; the file was left untouched: move it aside (or choose another data directory) to start with an empty store", path, err)
}

// guardCorruption runs fn, which reads a bbolt file, and turns the panics
// bbolt raises on damaged pages, and the faults of reading past the end of a
// file shorter than its pages claim, into ErrCorrupt.
func guardCorruption(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	return fn()
}
