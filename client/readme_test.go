package client_test

import (
	"os"
	"strings"
	"testing"
)

// docs/go-client.md's program is the package doc's example, so the
// one a new user copies shows what the package documents (the environment,
// OnRetry and GiveUpUnreached).
func TestReadmeGoExampleIsThePackageExample(t *testing.T) {
	page, err := os.ReadFile("../docs/go-client.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), "```go\n")
	if !ok {
		t.Fatal("docs/go-client.md has no Go block")
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
		t.Fatalf("doc.go's example and docs/go-client.md's differ:\n--- doc.go\n%s\n--- docs/go-client.md\n%s", got, block)
	}
	for _, want := range []string{"OnRetry", "GiveUpUnreached"} {
		if !strings.Contains(block, want) {
			t.Errorf("the docs/go-client.md example does not use %s, so an unreachable daemon stays silent", want)
		}
	}
}
