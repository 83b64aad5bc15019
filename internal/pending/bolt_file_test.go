package pending_test

// What OpenBolt does with the file it is given: creates it, refuses files it
// cannot identify without changing a byte, and fails clearly when locked or
// read-only.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/questiond/questiond/internal/pending"
)

func TestOpenBoltCreatesFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "questiond")
	path := filepath.Join(dir, "questions.db")
	b := openBolt(t, path, pending.BoltOptions{})
	if err := b.Put(t.Context(), fullQuestion("que_1")); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for name, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, path: 0o600} {
		if info, err := os.Stat(name); err != nil || info.Mode() != want {
			t.Errorf("%s: mode %v, %v; want %v", name, info.Mode(), err, want)
		}
	}

	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open with bbolt: %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		if got := string(tx.Bucket([]byte("meta")).Get([]byte("format"))); got != `{"format":"questiond","version":1}` {
			t.Errorf("format marker = %s", got)
		}
		if tx.Bucket([]byte("questions")).Get([]byte("que_1")) == nil {
			t.Error("no record for que_1 in the questions bucket")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeQuestiondFile creates a questiond file holding n records and returns
// its path.
func writeQuestiondFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "questions.db")
	b, err := pending.OpenBolt(path, pending.BoltOptions{})
	if err != nil {
		t.Fatalf("open bolt: %v", err)
	}
	qs := make([]*pending.Question, n)
	for i := range qs {
		qs[i] = endedQuestion(fmt.Sprintf("que_%04d", i))
		qs[i].Message = strings.Repeat("long message ", 60)
	}
	if err := b.Put(t.Context(), qs...); err != nil {
		t.Fatalf("put: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return path
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "questions.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantRefused checks that OpenBolt fails with want, names the file, and
// leaves it exactly as it was.
func wantRefused(t *testing.T, path string, opts pending.BoltOptions, want error) error {
	t.Helper()
	before := readFile(t, path)
	b, err := pending.OpenBolt(path, opts)
	if err == nil {
		b.Close()
		t.Fatalf("open bolt succeeded, want %v", want)
	}
	if !errors.Is(err, want) || !strings.Contains(err.Error(), path) {
		t.Errorf("open bolt: err = %v, want %v naming %s", err, want, path)
	}
	if after := readFile(t, path); !bytes.Equal(before, after) {
		t.Errorf("the refused file changed (%d bytes before, %d after)", len(before), len(after))
	}
	t.Log(err)
	return err
}

func TestOpenBoltRefusesCorruptFiles(t *testing.T) {
	t.Parallel()
	garbage := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	const pageSize = 4096
	tests := map[string]func(t *testing.T) string{
		"random bytes": func(t *testing.T) string { return writeFile(t, garbage) },
		"short text":   func(t *testing.T) string { return writeFile(t, []byte("not a database\n")) },
		"wrong magic": func(t *testing.T) string {
			data := readFile(t, writeQuestiondFile(t, 1))
			for _, meta := range []int{0, pageSize} { // both meta pages
				binary.LittleEndian.PutUint32(data[meta+16:], 0xdeadbeef)
			}
			return writeFile(t, data)
		},
		"truncated": func(t *testing.T) string {
			data := readFile(t, writeQuestiondFile(t, 200))
			return writeFile(t, data[:len(data)/2])
		},
		"damaged pages": func(t *testing.T) string {
			data := readFile(t, writeQuestiondFile(t, 200))
			copy(data[4*pageSize:], garbage) // everything after the meta and freelist pages
			return writeFile(t, data)
		},
	}
	for name, file := range tests {
		t.Run(name, func(t *testing.T) {
			err := wantRefused(t, file(t), pending.BoltOptions{}, pending.ErrCorrupt)
			if err != nil && !strings.Contains(err.Error(), "move it aside") {
				t.Errorf("error %q does not say what to do", err)
			}
		})
	}
}

func TestOpenBoltRefusesForeignFiles(t *testing.T) {
	t.Parallel()
	bboltFile := func(t *testing.T, fill func(tx *bbolt.Tx) error) string {
		path := filepath.Join(t.TempDir(), "questions.db")
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(fill); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	put := func(bucket, key, value string) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte(bucket))
			if err != nil {
				return err
			}
			return b.Put([]byte(key), []byte(value))
		}
	}
	tests := map[string]struct {
		fill func(tx *bbolt.Tx) error
		says string
	}{
		"other buckets":      {put("widgets", "w1", "blue"), "widgets"},
		"meta of another":    {put("meta", "owner", "someone"), "marker"},
		"another format":     {put("meta", "format", `{"format":"elsewhere","version":1}`), "marker"},
		"newer questiond":    {put("meta", "format", `{"format":"questiond","version":2}`), "version 2"},
		"questions, no meta": {put("questions", "que_1", "{}"), "questions"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := wantRefused(t, bboltFile(t, tt.fill), pending.BoltOptions{}, pending.ErrForeign)
			if err != nil && !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not mention %q", err, tt.says)
			}
		})
	}
}

// An empty file or an empty bbolt database is what a crash while creating
// the journal leaves; OpenBolt finishes the job.
func TestOpenBoltAdoptsEmptyFiles(t *testing.T) {
	t.Parallel()
	emptyBbolt := filepath.Join(t.TempDir(), "questions.db")
	db, err := bbolt.Open(emptyBbolt, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for name, path := range map[string]string{"empty file": writeFile(t, nil), "empty bbolt database": emptyBbolt} {
		t.Run(name, func(t *testing.T) {
			b := openBolt(t, path, pending.BoltOptions{})
			if err := b.Put(t.Context(), fullQuestion("que_1")); err != nil {
				t.Fatalf("put: %v", err)
			}
			if got := loadAll(t, b); len(got) != 1 {
				t.Errorf("load = %d records, want 1", len(got))
			}
		})
	}
}

func TestOpenBoltLocked(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		option, want time.Duration
	}{
		"default": {0, time.Second},
		"custom":  {200 * time.Millisecond, 200 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "questions.db")
			first := openBolt(t, path, pending.BoltOptions{})
			if err := first.Put(t.Context(), fullQuestion("que_1")); err != nil {
				t.Fatalf("put: %v", err)
			}
			start := time.Now()
			err := wantRefused(t, path, pending.BoltOptions{LockTimeout: tt.option}, pending.ErrLocked)
			// bbolt retries the lock every 50ms and gives up one retry early.
			if waited := time.Since(start); waited < tt.want-100*time.Millisecond || waited > tt.want+2*time.Second {
				t.Errorf("refused after %v, want after about %v", waited, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), "another questiond") {
				t.Errorf("error %q does not say what to check", err)
			}

			if err := first.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			second := openBolt(t, path, pending.BoltOptions{LockTimeout: tt.option})
			if got := loadAll(t, second); len(got) != 1 {
				t.Errorf("once released: load = %d records, want 1", len(got))
			}
		})
	}
}

// A journal that cannot write fails every write with ErrUnavailable naming
// the file, changes nothing, and the store on it stores nothing.
func TestBoltReadOnly(t *testing.T) {
	t.Parallel()
	t.Run("read-only descriptor", func(t *testing.T) {
		// Works for root too, which writes through permission bits.
		ctx := t.Context()
		path := writeQuestiondFile(t, 0)
		seed := openBolt(t, path, pending.BoltOptions{})
		if err := seed.Put(ctx, fullQuestion("que_old")); err != nil {
			t.Fatalf("put: %v", err)
		}
		seed.Close()
		before := readFile(t, path)

		b, err := pending.OpenBoltReadOnlyFD(path, pending.BoltOptions{})
		if err != nil {
			t.Fatalf("open bolt: %v", err)
		}
		defer b.Close()
		for name, err := range map[string]error{
			"put":    b.Put(ctx, fullQuestion("que_new")),
			"delete": b.Delete(ctx, "que_old"),
		} {
			if !errors.Is(err, pending.ErrUnavailable) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: err = %v, want ErrUnavailable naming %s", name, err, path)
			}
		}

		m := openStore(t, b, pending.Options{})
		if err := m.Create(ctx, ask("que_new")); !errors.Is(err, pending.ErrUnavailable) {
			t.Errorf("create: err = %v, want ErrUnavailable", err)
		}
		if _, err := m.Settle(ctx, "que_old", replied("Red")); !errors.Is(err, pending.ErrUnavailable) {
			t.Errorf("settle: err = %v, want ErrUnavailable", err)
		}
		if l, _ := m.List(ctx, pending.Filter{}); fmt.Sprint(ids(l)) != "[que_old]" {
			t.Errorf("list = %v, want [que_old] still pending", ids(l))
		}
		if after := readFile(t, path); !bytes.Equal(before, after) {
			t.Error("the file changed")
		}
		if got := loadAll(t, b); len(got) != 1 || got["que_old"].Ended != nil {
			t.Errorf("load after the failures = %d records, want que_old pending", len(got))
		}
	})
	t.Run("missing file on a read-only descriptor", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "questions.db")
		if _, err := pending.OpenBoltReadOnlyFD(path, pending.BoltOptions{}); !errors.Is(err, pending.ErrUnavailable) || !strings.Contains(err.Error(), path) {
			t.Errorf("open bolt: err = %v, want ErrUnavailable naming %s", err, path)
		}
	})

	asRoot := os.Geteuid() == 0
	t.Run("file mode 0400", func(t *testing.T) {
		if asRoot {
			t.Skip("root writes through mode 0400; the read-only descriptor case covers this")
		}
		path := writeQuestiondFile(t, 1)
		if err := os.Chmod(path, 0o400); err != nil {
			t.Fatal(err)
		}
		_, err := pending.OpenBolt(path, pending.BoltOptions{})
		if !errors.Is(err, pending.ErrUnavailable) || !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), path) {
			t.Errorf("open bolt: err = %v, want ErrUnavailable, permission denied, naming %s", err, path)
		}
	})
	t.Run("read-only directory", func(t *testing.T) {
		if asRoot {
			t.Skip("root creates files in mode 0500 directories; the read-only descriptor cases cover this")
		}
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o700)
		path := filepath.Join(dir, "questions.db")
		if _, err := pending.OpenBolt(path, pending.BoltOptions{}); !errors.Is(err, pending.ErrUnavailable) || !strings.Contains(err.Error(), path) {
			t.Errorf("open bolt: err = %v, want ErrUnavailable naming %s", err, path)
		}
	})
}
