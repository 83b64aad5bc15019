package elicit

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point property
// (DerivedCoreProperties.txt, Unicode 15): characters a renderer shows as
// nothing when it has no glyph for them.
var defaultIgnorable = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00AD, Hi: 0x00AD, Stride: 1},
		{Lo: 0x034F, Hi: 0x034F, Stride: 1},
		{Lo: 0x061C, Hi: 0x061C, Stride: 1},
		{Lo: 0x115F, Hi: 0x1160, Stride: 1},
		{Lo: 0x17B4, Hi: 0x17B5, Stride: 1},
		{Lo: 0x180B, Hi: 0x180F, Stride: 1},
		{Lo: 0x200B, Hi: 0x200F, Stride: 1},
		{Lo: 0x202A, Hi: 0x202E, Stride: 1},
		{Lo: 0x2060, Hi: 0x206F, Stride: 1},
		{Lo: 0x3164, Hi: 0x3164, Stride: 1},
		{Lo: 0xFE00, Hi: 0xFE0F, Stride: 1},
		{Lo: 0xFEFF, Hi: 0xFEFF, Stride: 1},
		{Lo: 0xFFA0, Hi: 0xFFA0, Stride: 1},
		{Lo: 0xFFF0, Hi: 0xFFF8, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x1BCA0, Hi: 0x1BCA3, Stride: 1},
		{Lo: 0x1D173, Hi: 0x1D17A, Stride: 1},
		{Lo: 0xE0000, Hi: 0xE0FFF, Stride: 1},
	},
}

// isInvisible reports the default-ignorable characters Shown makes visible
// (as U+FFFD): those that draw nothing and join nothing, so their only
// effect on what an operator reads is to hide that two texts differ — a
// zero-width space, a word joiner, a Hangul filler, tag characters. Kept
// are the ones legitimate text needs: the zero-width joiner and non-joiner
// (emoji sequences, Persian and Indic scripts), variation selectors
// (emoji presentation, CJK variants), Mongolian free variation selectors,
// and the bidirectional controls and marks, which Shown treats on their own.
// Tag characters are kept inside an emoji flag sequence (see Shown).
func isInvisible(r rune) bool {
	switch {
	case r == '\u200C', r == '\u200D', // joiners
		r >= '\uFE00' && r <= '\uFE0F', r >= 0xE0100 && r <= 0xE01EF, // variation selectors
		r >= '\u180B' && r <= '\u180D', r == '\u180F', // Mongolian variation selectors
		isBidiControl(r), isBidiMark(r):
		return false
	}
	return unicode.Is(defaultIgnorable, r)
}

// Emoji tag sequences (subdivision flags such as England's) are a black
// flag, tag characters, and a cancel tag.
const (
	blackFlag = '\U0001F3F4'
	tagFirst  = '\U000E0020'
	tagCancel = '\U000E007F'
)

func isFlagTag(r rune) bool { return r >= tagFirst && r <= tagCancel }

// sameToOperators maps s to a key that is equal for two texts an operator
// cannot tell apart: without default-ignorable characters (zero-width
// spaces and joiners, variation selectors, bidirectional marks and
// controls) and in Unicode's compatibility composition (NFKC: "ﬁ" is "fi",
// full-width "Ａ" is "A"). Options and keys that share a key are refused.
func sameToOperators(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(defaultIgnorable, r) }) {
		s = strings.Map(func(r rune) rune {
			if unicode.Is(defaultIgnorable, r) {
				return -1
			}
			return r
		}, s)
	}
	return norm.NFKC.String(s)
}
