package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

// docs/http.md's walkthrough runs as written: its shell blocks after the event
// stream, pasted into bash against a live daemon, ask, list, reply and
// collect the typed result. People paste these commands; a placeholder or a
// missing header in them costs someone their first minutes.
func TestReadmeWalkthroughRunsAsWritten(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs docs/http.md's curl commands against a live daemon")
	for _, tool := range []string{"bash", "curl", "sed", "tee"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "apt-get install "+tool)
		}
	}
	blocks := shellBlocks(docSection(t, "docs/http.md", "## A five-minute walkthrough"))
	if len(blocks) < 5 {
		t.Fatalf("docs/http.md walkthrough: %d shell blocks, want the stream and four steps", len(blocks))
	}
	base, stop := startDaemon(t, nil, "--store", "memory")
	defer func() { _ = stop() }()
	script := "set -euo pipefail\n"
	for _, b := range blocks[1:] { // the first one is the endless event stream
		script += strings.ReplaceAll(b, "http://127.0.0.1:4097", base) + "\n"
	}
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{`"status":"pending"`, `ID=que_`, `true`, `"ending":"replied"`,
		`"content":{"hours":1200,"model":"SY215C","symptoms":["Black smoke","Low power"]}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %s:\n%s", want, out)
		}
	}
}
