package elicit

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxSafeInteger is 2^53, the largest magnitude up to which every integer is
// exactly representable as a float64 (and so in every JSON implementation).
const maxSafeInteger = 1 << 53

// decimal is a number literal split into sign, significant digits and a
// power of ten: value = ±digits × 10^exp, with no leading or trailing zeros
// in digits ("" means zero). It lets us decide exactly whether a literal is
// a whole number, which float64 rounding cannot ("3.0000000000000000001").
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// maxExponent caps exponents while scanning; anything beyond is far outside
// float64 range, and ParseFloat reports it.
const maxExponent = 1 << 20

// scanDecimal accepts [+-] digits [. digits] [(e|E) [+-] digits], where the
// integer or the fraction part (not both) may be empty. No hex, no
// underscores, no Inf or NaN, no thousands separators.
func scanDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	mantissa := s[intStart:i]
	fraction := ""
	if i < len(s) && s[i] == '.' {
		i++
		fracStart := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fraction = s[fracStart:i]
	}
	if mantissa == "" && fraction == "" {
		return decimal{}, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		var ok bool
		if exp, i, ok = scanExponent(s, i+1); !ok {
			return decimal{}, false
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	digits := strings.TrimLeft(mantissa+fraction, "0")
	exp -= len(fraction)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	d.digits, d.exp = trimmed, exp
	return d, true
}

func scanExponent(s string, i int) (exp, next int, ok bool) {
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		if exp < maxExponent {
			exp = exp*10 + int(s[i]-'0')
		}
		i++
	}
	if i == start {
		return 0, i, false
	}
	if neg {
		exp = -exp
	}
	return exp, i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// integer returns the exact value when the literal is a whole number within
// ±2^53; ok is false otherwise.
func (d decimal) integer() (int64, bool) {
	if d.digits == "" {
		return 0, true
	}
	if d.exp < 0 || len(d.digits)+d.exp > 16 { // 2^53 has 16 digits
		return 0, false
	}
	u, err := strconv.ParseUint(d.digits+strings.Repeat("0", d.exp), 10, 64)
	if err != nil || u > maxSafeInteger {
		return 0, false
	}
	if d.neg {
		return -int64(u), true
	}
	return int64(u), true
}

// parseFloatText reads a decimal literal as a finite float64. It never
// returns -0, and refuses literals that overflow or silently round to zero.
func parseFloatText(s string) (float64, string) {
	d, ok := scanDecimal(s)
	if !ok {
		return 0, quote(s) + " is not a number"
	}
	f, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, quote(s) + " is out of range"
	}
	if err != nil {
		return 0, quote(s) + " is not a number"
	}
	if f == 0 {
		if d.digits != "" {
			return 0, quote(s) + " is too close to zero to represent"
		}
		return 0, "" // +0, also for "-0"
	}
	return f, ""
}

// parseNumeric reads text as the property's number type: an int64 for
// integers (whole, within ±2^53), a float64 for numbers.
func (p *Property) parseNumeric(text string) (any, string) {
	if _, ok := scanDecimal(text); !ok {
		if p.Kind == KindInteger {
			return nil, quote(text) + " is not an integer"
		}
		return nil, quote(text) + " is not a number"
	}
	f, problem := parseFloatText(text)
	if problem != "" {
		return nil, problem
	}
	if p.Kind != KindInteger {
		return f, ""
	}
	d, _ := scanDecimal(text) // parseFloatText already checked the syntax
	if d.exp < 0 {
		return nil, quote(text) + " is not an integer"
	}
	n, ok := d.integer()
	if !ok {
		return nil, quote(text) + " is outside the safe integer range ±2^53"
	}
	return n, ""
}

// parseBoolText accepts the Yes/No labels and true/false, case-insensitively.
func parseBoolText(s string) (bool, bool) {
	switch {
	case strings.EqualFold(s, yesLabel), strings.EqualFold(s, "true"):
		return true, true
	case strings.EqualFold(s, noLabel), strings.EqualFold(s, "false"):
		return false, true
	}
	return false, false
}

// choiceIndex finds the choice an answer names.
type choiceIndex struct {
	byLabel map[string]int
	byValue map[string]int
	byFold  map[string]int // -1 when several labels fold to the same key
}

func newChoiceIndex(choices []Choice) *choiceIndex {
	ix := &choiceIndex{
		byLabel: make(map[string]int, len(choices)),
		byValue: make(map[string]int, len(choices)),
		byFold:  make(map[string]int, len(choices)),
	}
	for i, c := range choices {
		ix.byLabel[c.Label] = i
		ix.byValue[c.Value] = i
		k := foldKey(c.Label)
		if _, seen := ix.byFold[k]; seen {
			ix.byFold[k] = -1
		} else {
			ix.byFold[k] = i
		}
	}
	return ix
}

// match tries, in order: the exact label, the exact value, the trimmed
// label or value, the label as written in the schema, and a unique
// case-insensitive label.
func (ix *choiceIndex) match(answer string) (int, bool) {
	if i, ok := ix.byLabel[answer]; ok {
		return i, true
	}
	if i, ok := ix.byValue[answer]; ok {
		return i, true
	}
	trimmed := strings.TrimSpace(answer)
	if i, ok := ix.byLabel[trimmed]; ok {
		return i, true
	}
	if i, ok := ix.byValue[trimmed]; ok {
		return i, true
	}
	// A label copied from the schema, before questiond neutralised its
	// bidirectional controls, names the option it shows as.
	if i, ok := ix.byLabel[Shown(trimmed)]; ok {
		return i, true
	}
	if i, ok := ix.byFold[foldKey(trimmed)]; ok && i >= 0 {
		return i, true
	}
	return 0, false
}

// foldKey maps s to a key that is equal for two strings exactly when
// strings.EqualFold says they are equal: every rune becomes the smallest
// rune of its simple case-folding orbit.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		smallest := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			smallest = min(smallest, f)
		}
		b.WriteRune(smallest)
	}
	return b.String()
}

// quoteLimit bounds how much of an answer an error message repeats.
const quoteLimit = 60

// quote shows a string in a message, Go-quoted and cut to quoteLimit runes.
func quote(s string) string {
	if utf8.RuneCountInString(s) > quoteLimit {
		s = string([]rune(s)[:quoteLimit-1]) + "…"
	}
	return strconv.Quote(s)
}

// formatNumber shows a number without exponent notation when it is of an
// everyday size.
func formatNumber(f float64) string {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if abs == 0 || abs >= 1e-6 && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
