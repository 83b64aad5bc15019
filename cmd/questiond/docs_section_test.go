package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docSection is the text of file (a path from the repository's top, such
// as "docs/http.md") from the heading that starts with heading (a whole
// "## …" line prefix) to the next heading of that level. A page's title
// ("# …", its first line) names the whole page.
func docSection(t *testing.T, file, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		t.Fatal(err)
	}
	text := "\n" + string(data)
	start := strings.Index(text, "\n"+heading)
	if start < 0 {
		t.Fatalf("%s: no section %q", file, heading)
	}
	if start == 0 && strings.HasPrefix(heading, "# ") {
		return string(data)
	}
	level := heading[:strings.Index(heading, " ")+1] // "## "
	section := text[start+1:]
	if end := strings.Index(section[len(heading):], "\n"+level); end >= 0 {
		section = section[:len(heading)+end+1]
	}
	return section
}
