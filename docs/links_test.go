// Package docs holds the tests of questiond's documentation: README.md and
// the pages of docs/. It has no code of its own.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// pages are README.md and every page of docs/, as paths from the
// repository's top.
func pages(t *testing.T) []string {
	t.Helper()
	found, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	list := []string{"README.md"}
	for _, p := range found {
		list = append(list, filepath.Join("docs", p))
	}
	if len(list) < 10 {
		t.Fatalf("found only %v", list)
	}
	return list
}

// read returns the file at path (from the repository's top).
func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// prose is text without its fenced code blocks and code spans, where a
// link is not a link.
func prose(text string) []string {
	var lines []string
	fenced := false
	span := regexp.MustCompile("`[^`]*`")
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		lines = append(lines, span.ReplaceAllStringFunc(line, func(code string) string {
			return strings.Repeat("x", len(code)) // headings keep their words, for anchors
		}))
	}
	return lines
}

// anchors are the ids GitHub gives the headings of a markdown text: the
// heading's words in lower case, punctuation dropped, spaces as hyphens,
// "-1", "-2", … after repeats.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var id strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				id.WriteRune(r)
			case r == ' ':
				id.WriteRune('-')
			}
		}
		slug := id.String()
		for n := 1; ids[slug]; n++ {
			slug = fmt.Sprintf("%s-%d", id.String(), n)
		}
		ids[slug] = true
	}
	return ids
}

var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	hasScheme    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// Every relative link of README.md and docs/*.md resolves: the file or
// directory it names exists, and an #anchor names a heading of the page it
// points to. Pages move; a newcomer's first click should not be a 404.
func TestRelativeLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range pages(t) {
		text := read(t, page)
		for i, line := range prose(text) {
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if hasScheme.MatchString(target) || strings.HasPrefix(target, "//") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				resolved := page
				if path != "" {
					resolved = filepath.Join(filepath.Dir(page), path)
					if _, err := os.Stat(filepath.Join("..", resolved)); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", page, i+1, target, resolved)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(resolved, ".md") {
					t.Errorf("%s:%d: link %q: an anchor in a file that is not markdown", page, i+1, target)
					continue
				}
				if !anchors(read(t, resolved))[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", page, i+1, target, resolved, anchor)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d relative links: the link pattern no longer finds them", checked)
	}
}

// The anchors are GitHub's: what the links above are checked against.
func TestAnchorsAreGitHubs(t *testing.T) {
	got := anchors("# Ask over HTTP\n## Retries and `Idempotency-Key`\n```sh\n# not a heading\n```\n## Routes\n## Routes\n### Where questiond differs from OpenCode on purpose\n")
	for _, want := range []string{"ask-over-http", "retries-and-idempotency-key", "routes", "routes-1",
		"where-questiond-differs-from-opencode-on-purpose"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block became a heading")
	}
}
