package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

// The README's walkthrough runs as written: its shell blocks after the event
// stream, pasted into bash against a live daemon, ask, list, reply and
// collect the typed result. People paste these commands; a placeholder or a
// missing header in them costs someone their first minutes.
func TestReadmeWalkthroughRunsAsWritten(t *testing.T) {
	testenv.Heavy(t, "runs the README's curl commands against a live daemon")
	for _, tool := range []string{"bash", "curl", "sed", "tee"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "apt-get install "+tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## A five-minute walkthrough")
	end := strings.Index(text, "## Ask from a script")
	if start < 0 || end < start {
		t.Fatal("README: the walkthrough section is missing")
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text[start:end], -1)
	if len(blocks) < 5 {
		t.Fatalf("README walkthrough: %d shell blocks, want the stream and four steps", len(blocks))
	}
	base, stop := startDaemon(t, nil, "--store", "memory")
	defer func() { _ = stop() }()
	script := "set -euo pipefail\n"
	for _, b := range blocks[1:] { // the first one is the endless event stream
		script += strings.ReplaceAll(b[1], "http://127.0.0.1:4097", base) + "\n"
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
