package daemon_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// createQuestion asks one question without waiting for its answer and
// returns the status and body of the answer to the ask.
func createQuestion(t *testing.T, base string) (int, string) {
	t.Helper()
	body := `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`
	resp, err := http.Post(base+"/elicitations", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// awaitReady polls /readyz until it answers want, failing after limit.
func awaitReady(t *testing.T, base string, want int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		status, body := probe(t, http.MethodGet, base+"/readyz", "")
		if status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %s after %s, want %d", status, body, limit, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A store whose write-ahead log cannot be created fails every create: it is
// not ready while that lasts, and is ready again by itself once the cause
// is gone, before any client tries another write.
func TestReadinessFollowsTheLastCommit(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	d := running(t, cfg)
	base := "http://" + d.Addr().String()
	blocker := cfg.BoltPath + "-wal.1" // where the first commit puts the log's second segment
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	const named = "The bbolt store in --data-dir is unavailable, so questiond cannot read or write questions"
	if status, body := createQuestion(t, base); status != http.StatusServiceUnavailable || !strings.Contains(body, named) || strings.Contains(body, cfg.BoltPath) {
		t.Fatalf("create with no write-ahead log possible: %d %s, want 503 naming the store (%q) and not its path", status, body, named)
	}
	awaitReady(t, base, http.StatusServiceUnavailable, 0)
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	awaitReady(t, base, http.StatusOK, 10*time.Second)
	if status, body := createQuestion(t, base); status != http.StatusCreated {
		t.Fatalf("create once ready again: %d %s, want 201", status, body)
	}
}

// On a volume too small for the write-ahead log (the 2 MiB tmpfs),
// questiond is not ready from the start, and becomes ready when the volume
// grows.
func TestReadinessNeedsRoomForTheLog(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "mounts a tmpfs")
	vol := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", vol).CombinedOutput(); err != nil {
		testenv.Missing(t, "mounting a tmpfs (root with CAP_SYS_ADMIN)", strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", vol).Run() })
	cfg := config(t)
	cfg.BoltPath = filepath.Join(vol, "questiond.db")
	d := running(t, cfg)
	base := "http://" + d.Addr().String()

	awaitReady(t, base, http.StatusServiceUnavailable, 0)
	if status, body := createQuestion(t, base); status != http.StatusServiceUnavailable {
		t.Fatalf("create on a full volume: %d %s, want 503", status, body)
	}
	awaitReady(t, base, http.StatusServiceUnavailable, 0)
	if out, err := exec.Command("mount", "-o", "remount,size=64m", vol).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v: %s", err, out)
	}
	awaitReady(t, base, http.StatusOK, 10*time.Second)
	if status, body := createQuestion(t, base); status != http.StatusCreated {
		t.Fatalf("create once the volume grew: %d %s, want 201", status, body)
	}
}
