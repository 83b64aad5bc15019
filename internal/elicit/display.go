package elicit

import (
	"strings"
	"unicode"
)

// Shown returns s as questiond shows agent-written text to operators, so the
// text cannot act on what displays it:
//
//   - control characters other than newline and tab become U+FFFD (a
//     terminal would obey escape sequences);
//   - the bidirectional embedding, override and isolate controls (U+202A–
//     U+202E, U+2066–U+2069) become U+FFFD: they reorder whatever follows
//     them, so "deny \u202Eevorppa" would read "deny approve". The
//     replacement stays visible because their presence is itself a warning;
//   - the bidirectional marks (U+200E, U+200F, U+061C) are removed: they are
//     invisible and cannot reverse letters, but can move digits and
//     punctuation across a direction boundary ("10 \u200F20 \u200F30" shows
//     as "10 30 20"). Without them text reads as its own letters' directions
//     say; replacing them would litter legitimate Hebrew or Arabic text;
//   - invisible characters that draw and join nothing (zero-width space,
//     word joiner, byte order mark, Hangul fillers, tag characters outside
//     an emoji flag; see isInvisible) become U+FFFD: "approve" and
//     "app\u200Brove" must not look the same.
//
// Everything else, right-to-left letters, joiners and variation selectors
// included, is kept as written.
func Shown(s string) string {
	if !strings.ContainsFunc(s, needsNeutralising) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	var prev rune
	for _, r := range s {
		switch {
		case isBidiMark(r):
			continue
		case isFlagTag(r) && (prev == blackFlag || isFlagTag(prev) && prev != tagCancel):
			// part of an emoji flag sequence
		case needsNeutralising(r):
			r = unicode.ReplacementChar
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

func needsNeutralising(r rune) bool {
	return unicode.IsControl(r) && r != '\n' && r != '\t' || isBidiControl(r) || isBidiMark(r) || isInvisible(r)
}

// isBidiControl reports the embedding (LRE, RLE), override (LRO, RLO), pop
// (PDF) and isolate (LRI, RLI, FSI, PDI) controls.
func isBidiControl(r rune) bool {
	return r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069'
}

// isBidiMark reports the left-to-right, right-to-left and Arabic letter
// marks.
func isBidiMark(r rune) bool {
	return r == '\u200E' || r == '\u200F' || r == '\u061C'
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}
