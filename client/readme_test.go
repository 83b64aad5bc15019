package client_test

import (
	"os"
	"strings"
	"testing"
)

// The README's "Ask from Go" program is the package doc's example, so the
// one a new user copies shows what the package documents (the environment,
// OnRetry and GiveUpUnreached).
func TestReadmeGoExampleIsThePackageExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Ask from Go\n")
	if !ok {
		t.Fatal(`README has no "## Ask from Go" section`)
	}
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal(`"Ask from Go" has no Go block`)
	}
	block, _, _ = strings.Cut(block, "```")

	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(doc), "// # Example\n//\n")
	if !ok {
		t.Fatal("doc.go has no Example section")
	}
	var lines []string
	for _, line := range strings.Split(example, "\n") {
		if !strings.HasPrefix(line, "//") {
			break
		}
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(line, "//"), "\t"))
	}
	if got := strings.Join(lines, "\n") + "\n"; got != block {
		t.Fatalf("doc.go's example and the README's differ:\n--- doc.go\n%s\n--- README\n%s", got, block)
	}
	for _, want := range []string{"OnRetry", "GiveUpUnreached"} {
		if !strings.Contains(block, want) {
			t.Errorf("the README example does not use %s, so an unreachable daemon stays silent", want)
		}
	}
}
