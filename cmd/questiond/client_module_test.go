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

// docs/go-client.md's ways of using the Go client from another module work: each
// shell block of "Ask from Go", run in a new module that holds the
// section's example program, with this repository beside it as
// ../questiond (a link to the tree under test), lets that module build.
// `go get` of the client cannot: the module is not published.
//
// The new module starts with this repository's go.sum, so every download
// is checked against known hashes without asking the checksum database,
// and the module cache answers: the test works offline.
func TestReadmeGoClientFromAnotherModule(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "builds a separate module with the go command")
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.Missing(t, "bash", "apt-get install bash")
	}
	section := docSection(t, "docs/go-client.md", "# Ask from Go")
	program := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(section)
	if program == nil || !strings.Contains(program[1], `"github.com/questiond/questiond/client"`) {
		t.Fatal("docs/go-client.md has no example program importing the client")
	}
	blocks := shellBlocks(section)
	if len(blocks) == 0 {
		t.Fatal("docs/go-client.md does not say how to use the client from another module")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for i, block := range blocks {
		dir := t.TempDir()
		if err := os.Symlink(repo, filepath.Join(dir, "questiond")); err != nil {
			t.Fatal(err)
		}
		agent := filepath.Join(dir, "agent")
		if err := os.Mkdir(agent, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{
			"go.mod":  "module example.com/agent\n\ngo 1.26\n",
			"go.sum":  string(sums),
			"main.go": program[1],
		} {
			if err := os.WriteFile(filepath.Join(agent, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := "set -euo pipefail\n" + block + "\ngo build -o agent .\n"
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = agent
		cmd.Env = append(os.Environ(), "GOWORK=") // empty: go looks for a go.work, such as one the block writes
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("block %d of docs/go-client.md:\n%s\nfailed in a new module: %v\n%s", i+1, block, err, out)
			continue
		}
		if _, err := os.Stat(filepath.Join(agent, "agent")); err != nil {
			t.Errorf("block %d of docs/go-client.md: the module did not build: %v", i+1, err)
		}
	}
}
