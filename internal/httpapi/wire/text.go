package wire

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/elicit"
)

// What a client sent, as questiond shows it to operators (titles, toasts)
// and writes it to its log: one bounded line.

// OneLine is the first line of s without control characters, as operators
// are shown agents' text (elicit.Shown: no bidirectional overrides), trimmed
// and cut to at most max runes (the cut marked with an ellipsis).
func OneLine(s string, max int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, elicit.Shown(line)))
	if utf8.RuneCountInString(line) > max {
		runes := []rune(line)
		line = strings.TrimSpace(string(runes[:max-1])) + "…"
	}
	return line
}

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut:
// what a client sends is logged at a bounded length.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
