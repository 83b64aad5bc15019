package pending

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// openWAL opens a store at path whose idle checkpoint never comes during a
// test, with segments of segment bytes (the default when zero).
func openWAL(t *testing.T, path string, segment int64) *Bolt {
	t.Helper()
	b, err := OpenBolt(path, BoltOptions{NoSync: true, walSegment: segment, idleCheckpoint: time.Hour})
	if err != nil {
		t.Fatalf("open bolt: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// crashCopy copies b's database and log, as a crash would leave them at this
// moment (no commit and no checkpoint running), to a new directory, and
// returns the database's path there.
func crashCopy(t *testing.T, b *Bolt) string {
	t.Helper()
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	b.ckMu.Lock()
	defer b.ckMu.Unlock()
	return copyStoreFiles(t, b.path)
}

// copyStoreFiles copies the database at path and its write-ahead log to a
// new directory and returns the copy's path.
func copyStoreFiles(t testing.TB, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	for _, suffix := range []string{"", "-wal.0", "-wal.1"} {
		data, err := os.ReadFile(path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func tablePut(t *testing.T, tb *Table, key, value string) {
	t.Helper()
	if err := tb.Put(t.Context(), key, []byte(value)); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// contents reopens the store at path and returns its "kv" table, as a
// string that a failure message can show.
func contents(t *testing.T, path string) string {
	t.Helper()
	b, err := OpenBolt(path, BoltOptions{NoSync: true})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer b.Close()
	tb, _ := b.Table("kv")
	records, err := tb.Load(t.Context())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	var out []string
	for k, v := range records {
		out = append(out, k+"="+string(v))
	}
	return fmt.Sprint(sortStrings(out))
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// frameEnds returns the offsets in segment file path just past each frame.
func frameEnds(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := decodeHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int
	off := walHeaderSize
	for _, ops := range readFrames(data[walHeaderSize:], epoch).ops {
		off += walFrameHeader + len(encodeOps(nil, ops))
		ends = append(ends, off)
	}
	return ends
}

// A crash leaves the commits in the log, not in the database: reopening
// replays them, deletes included, and a clean close leaves no log behind.
func TestWALReplaysAfterCrash(t *testing.T) {
	t.Parallel()
	b := openWAL(t, filepath.Join(t.TempDir(), "q.db"), 0)
	tb, _ := b.Table("kv")
	tablePut(t, tb, "a", "1")
	tablePut(t, tb, "b", "2")
	tablePut(t, tb, "a", "3")
	if err := tb.Delete(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopy(t, b)
	if got := len(frameEnds(t, crashed+"-wal.0")); got != 4 {
		t.Fatalf("the log holds %d frames, want 4, one per commit", got)
	}
	if got, want := contents(t, crashed), "[a=3]"; got != want {
		t.Errorf("after the crash: %s, want %s", got, want)
	}
	for _, suffix := range []string{"-wal.0", "-wal.1"} {
		if _, err := os.Stat(crashed + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after a clean close (err %v)", suffix, err)
		}
	}
	if got, want := contents(t, crashed), "[a=3]"; got != want {
		t.Errorf("from the database alone: %s, want %s", got, want)
	}
}

// The frame a crash tore (cut short, or a byte that never reached the disk)
// is ignored and the frames before it are replayed.
func TestWALIgnoresTornTail(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(t *testing.T, wal string, start, end int){
		"cut mid-frame": func(t *testing.T, wal string, start, end int) {
			if err := os.Truncate(wal, int64(start+(end-start)/2)); err != nil {
				t.Fatal(err)
			}
		},
		"byte flipped": func(t *testing.T, wal string, start, end int) {
			f, err := os.OpenFile(wal, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var one [1]byte
			if _, err := f.ReadAt(one[:], int64(end-2)); err != nil {
				t.Fatal(err)
			}
			one[0] ^= 0x40
			if _, err := f.WriteAt(one[:], int64(end-2)); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := openWAL(t, filepath.Join(t.TempDir(), "q.db"), 0)
			tb, _ := b.Table("kv")
			tablePut(t, tb, "a", "1")
			tablePut(t, tb, "b", "2")
			tablePut(t, tb, "c", "3")
			crashed := crashCopy(t, b)
			ends := frameEnds(t, crashed+"-wal.0")
			damage(t, crashed+"-wal.0", ends[1], ends[2])
			if got, want := contents(t, crashed), "[a=1 b=2]"; got != want {
				t.Errorf("after a torn last frame: %s, want %s", got, want)
			}
		})
	}
}

// Frames behind a damaged one are never replayed: neither what an earlier
// use of the segment left there (valid frames of an older epoch) nor a
// newer segment, which would build a state that never was.
func TestWALStopsAtDamage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	b := openWAL(t, path, 0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	frame := func(epoch uint64, key, value string) []byte {
		return appendFrame(nil, epoch, encodeOps(nil, []walOp{{bucket: []byte("kv"), key: []byte(key), value: []byte(value)}}))
	}
	seg0 := encodeHeader(5)
	seg0 = append(seg0, frame(5, "k", "new")...)
	damaged := frame(5, "x", "lost")
	damaged[len(damaged)-1] ^= 1
	seg0 = append(seg0, damaged...)
	seg0 = append(seg0, frame(3, "k", "old")...) // left by the segment's use under epoch 3
	seg0 = append(seg0, frame(3, "y", "old")...)
	seg1 := append(encodeHeader(6), frame(6, "z", "after the damage")...)
	for i, data := range [][]byte{seg0, seg1} {
		if err := os.WriteFile(walPath(path, i), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := contents(t, path), "[k=new]"; got != want {
		t.Errorf("after a damaged frame: %s, want %s", got, want)
	}
}

// A file where the log should be that this build did not write is refused
// by name, and nothing is changed.
func TestWALRefusesForeignLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	b := openWAL(t, path, 0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	foreign := bytes.Repeat([]byte("not a log "), 1000)
	if err := os.WriteFile(walPath(path, 1), foreign, 0o600); err != nil {
		t.Fatal(err)
	}
	db, _ := os.ReadFile(path)
	_, err := OpenBolt(path, BoltOptions{NoSync: true})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), walPath(path, 1)) {
		t.Fatalf("open: err = %v, want ErrCorrupt naming %s", err, walPath(path, 1))
	}
	if after, _ := os.ReadFile(walPath(path, 1)); !bytes.Equal(after, foreign) {
		t.Error("the foreign log changed")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, db) {
		t.Error("the database changed")
	}
}

// Many commits through small segments switch segments and checkpoint in the
// background; a write too big for a segment goes to the database directly,
// after the log is applied and cut off, so a crash after it cannot replay
// an older value over it. Nothing acknowledged is lost at any point.
func TestWALSegmentsCheckpointAndOversizedWrites(t *testing.T) {
	t.Parallel()
	const segment = 16 << 10
	b := openWAL(t, filepath.Join(t.TempDir(), "q.db"), segment)
	tb, _ := b.Table("kv")
	want := map[string]string{}
	put := func(k, v string) {
		tablePut(t, tb, k, v)
		want[k] = v
	}
	check := func(when string) {
		t.Helper()
		var w []string
		for k, v := range want {
			w = append(w, k+"="+v)
		}
		if got := contents(t, crashCopy(t, b)); got != fmt.Sprint(sortStrings(w)) {
			t.Errorf("%s: crash copy holds %.200s…, want %.200s…", when, got, fmt.Sprint(sortStrings(w)))
		}
	}
	for i := range 300 {
		put(fmt.Sprintf("k%03d", i%50), strings.Repeat(fmt.Sprint(i), 40))
	}
	if b.epoch < 3 {
		t.Errorf("300 commits of 100+ bytes in %d-byte segments reached epoch %d, want segments to switch", segment, b.epoch)
	}
	check("after many commits")
	put("k001", strings.Repeat("big", segment)) // bigger than a segment
	check("after an oversized write")
	put("k002", "small again")
	check("after a write following it")
}

// A frame that fails to write fails its commit, Ping says so, and the next
// commit cuts the log off first, so a crash cannot replay the failed frame.
func TestWALFailedWrite(t *testing.T) {
	t.Parallel()
	b := openWAL(t, filepath.Join(t.TempDir(), "q.db"), 0)
	tb, _ := b.Table("kv")
	tablePut(t, tb, "a", "1")
	seg := b.segs[b.active]
	good := seg.f
	readOnly, err := os.Open(seg.path)
	if err != nil {
		t.Fatal(err)
	}
	seg.f = readOnly
	if err := tb.Put(t.Context(), "b", []byte("2")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("put on a log that cannot be written: err = %v, want ErrUnavailable", err)
	}
	if err := b.Ping(t.Context()); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "write-ahead log") {
		t.Errorf("ping: err = %v, want ErrUnavailable naming the write-ahead log", err)
	}
	seg.f = good
	readOnly.Close()
	// Whatever of the failed frame reached the file must not come back.
	if _, err := good.WriteAt(appendFrame(nil, seg.epoch, encodeOps(nil, []walOp{{bucket: []byte("kv"), key: []byte("b"), value: []byte("2")}})), seg.off); err != nil {
		t.Fatal(err)
	}
	tablePut(t, tb, "c", "3")
	if err := b.Ping(t.Context()); err != nil {
		t.Errorf("ping once the log writes again: %v", err)
	}
	if got, want := contents(t, crashCopy(t, b)), "[a=1 c=3]"; got != want {
		t.Errorf("after a failed write: %s, want %s", got, want)
	}
}

// Close stops the checkpointer, also when it had work: a sealed segment and
// an idle tick both due.
func TestWALCheckpointerStopsAtClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	b, err := OpenBolt(filepath.Join(t.TempDir(), "q.db"), BoltOptions{NoSync: true, walSegment: 8 << 10, idleCheckpoint: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := b.Table("kv")
	for i := range 100 {
		tablePut(t, tb, fmt.Sprint(i), strings.Repeat("v", 200))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}

// A crash that tears the tail of the segment in use, a restart that writes
// into the other segment, and a second crash: the second replay has
// everything acknowledged after the restart, although the torn frame of the
// first run is still in its file.
func TestWALCrashAfterCrash(t *testing.T) {
	t.Parallel()
	const segment = 16 << 10
	b := openWAL(t, filepath.Join(t.TempDir(), "q.db"), segment)
	tb, _ := b.Table("kv")
	tablePut(t, tb, "a", strings.Repeat("1", segment/3)) // past half: the next frame goes to segment 1
	tablePut(t, tb, "b", "2")
	tablePut(t, tb, "c", "3")
	if b.active != 1 {
		t.Fatalf("writing into segment %d, want 1", b.active)
	}
	first := crashCopy(t, b)
	ends := frameEnds(t, first+"-wal.1")
	if err := os.Truncate(first+"-wal.1", int64(ends[0]+(ends[1]-ends[0])/2)); err != nil {
		t.Fatal(err)
	}
	again := openWAL(t, first, segment)
	tb, _ = again.Table("kv")
	tablePut(t, tb, "d", "4")
	if got, want := contents(t, crashCopy(t, again)), "[a="+strings.Repeat("1", segment/3)+" b=2 d=4]"; got != want {
		t.Errorf("after the second crash: %.80s, want %.80s", got, want)
	}
}

// While background checkpoints fail, commits go on into the log until both
// segments are full, then fail with ErrUnavailable, and Ping says why; once
// a retry succeeds, commits and Ping recover, and nothing acknowledged is
// lost.
func TestWALFailingCheckpoint(t *testing.T) {
	t.Parallel()
	const segment = 16 << 10
	b, err := OpenBolt(filepath.Join(t.TempDir(), "q.db"), BoltOptions{NoSync: true, walSegment: segment, idleCheckpoint: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	var failing atomic.Bool
	failing.Store(true)
	b.onCheckpoint = func() error {
		if failing.Load() {
			return errors.New("disk says no")
		}
		return nil
	}
	tb, _ := b.Table("kv")
	acked := 0
	var full error
	for i := range 100 {
		if err := tb.Put(t.Context(), fmt.Sprint(i), []byte(strings.Repeat("v", 1000))); err != nil {
			full = err
			break
		}
		acked++
	}
	if !errors.Is(full, ErrUnavailable) || !strings.Contains(full.Error(), "disk says no") {
		t.Fatalf("after %d commits: err = %v, want ErrUnavailable with the checkpoint's error", acked, full)
	}
	if acked < segment/2/1100 {
		t.Errorf("only %d commits before the log was full, want at least half a segment's worth", acked)
	}
	if err := b.Ping(t.Context()); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "checkpoint") {
		t.Errorf("ping: err = %v, want ErrUnavailable about the checkpoint", err)
	}
	failing.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for b.Ping(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("ping still fails 10 s after checkpoints work again: %v", b.Ping(t.Context()))
		}
		time.Sleep(time.Millisecond)
	}
	tablePut(t, tb, "after", "ok")
	records, err := tb.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != acked+1 {
		t.Errorf("the table holds %d records, want the %d acknowledged", len(records), acked+1)
	}
}
