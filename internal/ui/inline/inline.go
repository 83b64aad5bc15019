// Package inline is the one rule for the inline markdown agents write in
// what operators read (session titles, messages, headers, labels): **strong**,
// *emphasis* and `code` are marks, and their markers never show. A surface
// with styles renders the marks (the /ui page, with assets/inline.js, which
// holds the same Pattern); one without them (a terminal's title line) shows
// Plain. Anything else stays as written; underscores are text, since ids and
// snake_case are full of them.
package inline

import (
	"regexp"
	"strings"
)

// Pattern matches one mark: group 1 is strong, 2 emphasis, 3 code. Its
// syntax means the same in Go (RE2) and JavaScript, so the page and a Go
// surface split a text alike: no lookaround, and whitespace spelled out
// (JavaScript's \s is Unicode's, Go's ASCII's). A mark's text does not start
// or end with whitespace (as CommonMark's flanking rule asks) and holds no
// '*'; code spans one line.
const Pattern = "\\*\\*([^*\\t\\n\\v\\f\\r ]|[^*\\t\\n\\v\\f\\r ][^*]*[^*\\t\\n\\v\\f\\r ])\\*\\*" +
	"|\\*([^*\\t\\n\\v\\f\\r ]|[^*\\t\\n\\v\\f\\r ][^*]*[^*\\t\\n\\v\\f\\r ])\\*" +
	"|`([^`\\n]+)`"

var marks = regexp.MustCompile(Pattern)

// Mark is how a span shows.
type Mark string

// The marks; Text is plain text.
const (
	Text   Mark = ""
	Strong Mark = "strong"
	Em     Mark = "em"
	Code   Mark = "code"
)

// Span is a run of text with one mark.
type Span struct {
	Mark Mark   `json:"mark"`
	Text string `json:"text"`
}

// Spans splits s into its marked and plain runs, in order, markers removed;
// no span is empty.
func Spans(s string) []Span {
	var out []Span
	at := 0
	for _, m := range marks.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > at {
			out = append(out, Span{Text, s[at:m[0]]})
		}
		switch {
		case m[2] >= 0:
			out = append(out, Span{Strong, s[m[2]:m[3]]})
		case m[4] >= 0:
			out = append(out, Span{Em, s[m[4]:m[5]]})
		default:
			out = append(out, Span{Code, s[m[6]:m[7]]})
		}
		at = m[1]
	}
	if at < len(s) {
		out = append(out, Span{Text, s[at:]})
	}
	return out
}

// Plain is s as the page shows it, without styles: the markers gone.
func Plain(s string) string {
	if !strings.ContainsAny(s, "*`") {
		return s // no marker: most titles, on the console's publish path
	}
	var b strings.Builder
	for _, sp := range Spans(s) {
		b.WriteString(sp.Text)
	}
	return b.String()
}
