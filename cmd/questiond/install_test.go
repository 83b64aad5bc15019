package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/testenv"
)

// readmeSection is the README's text from the heading that starts with
// heading (a whole "## …" line prefix) to the next heading of that level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	return docSection(t, "README.md", heading)
}

// shellBlocks are the ```sh blocks of text, in order.
func shellBlocks(text string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// goEnv is one setting of the go command, as `go env` reports it.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// pathWithout is $PATH without the directories holding a program called
// name, so that only the one the test installs can answer to it.
func pathWithout(name string) string {
	var keep []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// The README's install block, pasted into bash at the top of a clone, puts
// a working questiond on PATH: it lands in $(go env GOPATH)/bin (here a
// temporary GOPATH, with the machine's module cache so nothing is
// downloaded), the PATH line finds it there, and its --help answers. Before
// it, "Ask from a script" ran into "questiond: command not found".
func TestReadmeInstallPutsQuestiondOnPath(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "builds the command with go install")
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.Missing(t, "bash", "apt-get install bash")
	}
	section := readmeSection(t, "## Install the `questiond` command")
	readme, _ := os.ReadFile("../../README.md")
	if strings.Index(string(readme), section) > strings.Index(string(readme), "## A two-minute walkthrough") {
		t.Error("README: installing the command comes after the walkthrough that uses it")
	}
	blocks := shellBlocks(section)
	if len(blocks) != 1 || !strings.Contains(blocks[0], "go install ./cmd/questiond") {
		t.Fatalf("README: the install section should have one shell block with go install ./cmd/questiond, has %q", blocks)
	}
	gopath := t.TempDir()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+blocks[0]+"\ncommand -v questiond\n")
	cmd.Dir = "../.."
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOBIN=") && !strings.HasPrefix(kv, "GOPATH=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GOPATH="+gopath, "GOMODCACHE="+goEnv(t, "GOMODCACHE"), "PATH="+pathWithout("questiond"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the install block failed: %v\n%s", err, out)
	}
	installed := filepath.Join(gopath, "bin", "questiond")
	if _, err := os.Stat(installed); err != nil {
		t.Fatalf("nothing at %s, where the README says go install puts it: %v\n%s", installed, err, out)
	}
	for _, want := range []string{"Usage:", "questiond ask [flags]", "--addr host:port", installed + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the install block's output lacks %q:\n%s", want, out)
		}
	}
}
