package replicas

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/questiond/questiond/internal/pgtest"
)

// A single-machine questiond's bbolt database moves to PostgreSQL with
// `questiond migrate`: replicas started on it list its pending question,
// serve its ended result, and keep its session records; a second run
// copies nothing.
func TestMigrateFromBolt(t *testing.T) {
	url := pgtest.Database(t)
	dataDir := t.TempDir()
	single := startProcess(t, "bolt", nil, "--store", "bolt", "--data-dir", dataDir)
	waiting, answered := create(t, single), create(t, single)
	if code, body := single.call(t, http.MethodPost, "/question/"+answered+"/reply", `{"answers":[["yes"]]}`); code != http.StatusOK {
		t.Fatalf("reply: %d %s", code, body)
	}
	if code, body := single.call(t, http.MethodPut, "/sessions/ses_quiet", `{"questionCapability":"none"}`); code/100 != 2 {
		t.Fatalf("put session: %d %s", code, body)
	}
	if err := single.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-single.proc.Exited()

	migrate := func() string {
		cmd := exec.Command(binary(t), "migrate", "--data-dir", dataDir)
		cmd.Env = append(os.Environ(), "QUESTIOND_DATABASE_URL="+url)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("questiond migrate: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := migrate(); !strings.Contains(out, "copied 2 questions and 1 session records") {
		t.Fatalf("questiond migrate said %q", out)
	}
	if out := migrate(); !strings.Contains(out, "copied 0 questions and 0 session records; 2 questions and 1 session records were already there") {
		t.Fatalf("a second questiond migrate said %q", out)
	}

	r := startReplica(t, "A", url)
	if code, body := r.call(t, http.MethodGet, "/question", ""); code != http.StatusOK || !strings.Contains(body, waiting) || strings.Contains(body, answered) {
		t.Fatalf("/question after the migration: %d %s; want only %s", code, body, waiting)
	}
	if code, body := r.call(t, http.MethodGet, "/elicitations/"+answered, ""); code != http.StatusOK || !strings.Contains(body, `"go":"yes"`) {
		t.Fatalf("the answered question after the migration: %d %s", code, body)
	}
	if code, body := r.call(t, http.MethodGet, "/sessions/ses_quiet", ""); code != http.StatusOK || !strings.Contains(body, `"none"`) {
		t.Fatalf("the session record after the migration: %d %s", code, body)
	}
}
