package pending_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/questiond/questiond/internal/pending"
)

func TestMemoryIsReadyUntilClosed(t *testing.T) {
	t.Parallel()
	m := pending.New(pending.Options{})
	if err := m.Ping(context.Background()); err != nil {
		t.Fatalf("open memory store: %v, want ready", err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Ping(context.Background()); !errors.Is(err, pending.ErrClosed) {
		t.Fatalf("closed store: %v, want ErrClosed", err)
	}
}

// A durable store is ready while its file and its write-ahead log are the
// ones at their paths: deleted or replaced underneath, its commits would be
// lost at the next start.
func TestBoltStoreIsReadyWhileItsFileIsThere(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"", "-wal.0", "-wal.1"} {
		t.Run("questions.db"+file, func(t *testing.T) { testBoltFileThere(t, file) })
	}
}

func testBoltFileThere(t *testing.T, suffix string) {
	for _, c := range []struct {
		name   string
		change func(path string) error
	}{
		{"deleted", os.Remove},
		{"replaced", func(path string) error {
			other := path + ".new"
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				return err
			}
			return os.Rename(other, path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "questions.db")
			b, err := pending.OpenBolt(path, pending.BoltOptions{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			m := openStore(t, b, pending.Options{})
			mustCreate(t, m, ask("que_1"))
			if err := m.Ping(context.Background()); err != nil {
				t.Fatalf("fresh file: %v, want ready", err)
			}
			if err := c.change(path + suffix); err != nil {
				t.Fatal(err)
			}
			err = m.Ping(context.Background())
			if !errors.Is(err, pending.ErrUnavailable) {
				t.Fatalf("file %s: %v, want ErrUnavailable", c.name, err)
			}
		})
	}
}

func TestBoltPingFailsOnceClosed(t *testing.T) {
	t.Parallel()
	b, err := pending.OpenBolt(filepath.Join(t.TempDir(), "q.db"), pending.BoltOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(context.Background()); err != nil {
		t.Fatalf("open file: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(context.Background()); !errors.Is(err, pending.ErrUnavailable) {
		t.Fatalf("closed file: %v, want ErrUnavailable", err)
	}
}
