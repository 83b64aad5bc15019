package bridge_test

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// pendingIDs lists the ids GET /question shows at base, or nil while
// nothing answers there.
func pendingIDs(base string) []string {
	res, err := http.Get(base + "/question")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var list []struct{ ID string }
	if json.NewDecoder(res.Body).Decode(&list) != nil {
		return nil
	}
	ids := make([]string, len(list))
	for i, q := range list {
		ids[i] = q.ID
	}
	return ids
}

// questiond restarting mid-question (bbolt) is waited out: the new daemon
// holds the same question, the operator answers it there, and the server
// gets that answer; nothing was asked twice.
func TestTheBridgeOutlivesAQuestiondRestart(t *testing.T) {
	bin := testkit.Binary(t)
	dir := t.TempDir()
	daemon := func(addr string) *launch.Process {
		return testkit.Launch(t, exec.Command(bin, "--addr", addr, "--data-dir", dir, "--store", "bolt", "--log-format", "json"),
			launch.Options{Name: "questiond", StartTimeout: 15 * time.Second})
	}
	first := daemon("127.0.0.1:0")
	cs, _, stderr := bridgeProcess(t, first.URL)
	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	var asked []string
	testkit.Eventually(t, 15*time.Second, "the question on the first daemon", func() bool {
		asked = pendingIDs(first.URL)
		return len(asked) == 1
	})
	if err := first.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, ok := first.Wait(15 * time.Second); !ok {
		t.Fatal("the first daemon did not stop")
	}
	second := daemon(first.Addr)
	var again []string
	testkit.Eventually(t, 15*time.Second, "the question back on the restarted daemon", func() bool {
		again = pendingIDs(second.URL)
		return len(again) > 0
	})
	if len(again) != 1 || again[0] != asked[0] {
		t.Fatalf("after the restart questiond holds %v, want the one question %s", again, asked[0])
	}
	ops := testkit.Watch(t, second.URL)
	q := testkit.Question{ID: asked[0]}
	for _, h := range []string{"Target", "Replicas", "Confirm", "Note"} {
		q.Questions = append(q.Questions, struct {
			Header   string `json:"header"`
			Question string `json:"question"`
		}{Header: h})
	}
	ops.Reply(q, map[string][]string{"Target": {"Staging"}, "Replicas": {"2"}, "Confirm": {"Yes"}, "Note": {}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError || mcptest.ToolText(o.Res) != "done" {
		t.Fatalf("CallTool after the restart: %v %+v; bridge stderr:\n%s", o.Err, o.Res, stderr)
	}
	if left := pendingIDs(second.URL); len(left) != 0 {
		t.Fatalf("still pending: %v", left)
	}
}
