package pending_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// crashChildEnv names the database the child process writes to.
const crashChildEnv = "QUESTIOND_PENDING_CRASH_CHILD"

// crashChild writes to the Bolt journal at path from several goroutines
// until it is killed: each question is created, then ended, then (one in
// three) deleted, each step a commit. It prints "send <id> <state>" before
// each commit and "ack <id> <state>" once it returns, one line per write.
func crashChild(path string) int {
	b, err := pending.OpenBolt(path, pending.WithSmallWAL(pending.BoltOptions{}, 64<<10, 20*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	round := os.Getenv(crashChildEnv + "_ROUND")
	say("ready")
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for n := 0; ; n++ {
				id := fmt.Sprintf("que_r%s_w%d_%d", round, w, n)
				steps := []struct {
					state string
					do    func() error
				}{
					{"created", func() error { return b.Put(ctx, fullQuestion(id)) }},
					{"ended", func() error { return b.Put(ctx, endedQuestion(id)) }},
					{"deleted", func() error { return b.Delete(ctx, id) }},
				}
				if n%3 != 0 {
					steps = steps[:2]
				}
				for _, step := range steps {
					say("send %s %s", id, step.state)
					if err := step.do(); err != nil {
						fmt.Fprintln(os.Stderr, "write:", err)
						os.Exit(1)
					}
					say("ack %s %s", id, step.state)
				}
			}
		})
	}
	wg.Wait()
	return 0
}

// A writer killed with SIGKILL at a random moment loses no write it was
// told had committed, and the reopened store holds nothing it never sent:
// each question is in the state of its last acknowledged write or of the
// one it was sending. Several rounds on the same files, each child
// replaying what the last one left in the write-ahead log.
func TestKillNineLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and kills processes; skipped with -short")
	}
	path := filepath.Join(t.TempDir(), "questions.db")
	for round := range 6 {
		acked, sent := runAndKill(t, path, round, time.Duration(30+rand.IntN(400))*time.Millisecond)
		// Read from a copy, so that the next child starts from what this one
		// left, write-ahead log included, as a restart after a crash does.
		b, err := pending.OpenBolt(pending.CopyStoreFiles(t, path), pending.BoltOptions{})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		stored := map[string]string{}
		qs, err := b.Load(t.Context())
		if err != nil {
			t.Fatalf("round %d: load: %v", round, err)
		}
		for _, q := range qs {
			stored[q.ID] = "created"
			if q.Ended != nil {
				stored[q.ID] = "ended"
			}
		}
		if err := b.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		prefix := fmt.Sprintf("que_r%d_", round)
		for id, state := range stored {
			if strings.HasPrefix(id, prefix) && sent[id] == "" {
				t.Errorf("round %d: %s is stored (%s) but was never sent", round, id, state)
			}
		}
		for id, last := range sent {
			got := stored[id]
			if got == "" {
				got = "deleted"
			}
			ack := acked[id]
			if got != last && got != ack && !(ack == "" && got == "deleted") {
				t.Errorf("round %d: %s is %s; acknowledged %q, then sent %q", round, id, got, ack, last)
			}
		}
		t.Logf("round %d: %d questions written, %d of them acknowledged at least once; %d stored in all", round, len(sent), len(acked), len(stored))
		if len(acked) == 0 {
			t.Errorf("round %d: killed before any write was acknowledged", round)
		}
	}
}

// runAndKill runs the child on path, kills it after it has written for
// about after, and returns each id's last acknowledged and last sent state.
func runAndKill(t *testing.T, path string, round int, after time.Duration) (acked, sent map[string]string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, fmt.Sprintf("%s_ROUND=%d", crashChildEnv, round))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("round %d: the child did not start: %q %s", round, lines.Text(), stderr.String())
	}
	killed := time.AfterFunc(after, func() { _ = cmd.Process.Kill() })
	defer killed.Stop()
	acked, sent = map[string]string{}, map[string]string{}
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) != 3 {
			continue
		}
		switch f[0] {
		case "send":
			sent[f[1]] = f[2]
		case "ack":
			acked[f[1]] = f[2]
		}
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("round %d: the child ended by itself (%v): %s", round, err, stderr.String())
	}
	return acked, sent
}
