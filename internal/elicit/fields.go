package elicit

import (
	"fmt"
	"math"
	"strings"
)

// Readers for the scalar keywords of a schema object, each checking the
// JSON type and range the keyword needs.

// countRange reads a pair of non-negative integer bounds such as
// minLength/maxLength.
func countRange(v *jsonValue, minKey, maxKey string, at jsonPath) (*int, *int, error) {
	lo, err := optionalCount(v, minKey, at)
	if err != nil {
		return nil, nil, err
	}
	hi, err := optionalCount(v, maxKey, at)
	if err != nil {
		return nil, nil, err
	}
	if lo != nil && hi != nil && *lo > *hi {
		return nil, nil, at.key(minKey).errorf("%s %d is greater than %s %d", minKey, *lo, maxKey, *hi)
	}
	return lo, hi, nil
}

// optionalCount reads a count keyword. It accepts what the SDKs decode into
// an int32: a plain integer literal, or a decimal one with a zero fraction.
func optionalCount(v *jsonValue, key string, at jsonPath) (*int, error) {
	n := v.get(key)
	if n == nil {
		return nil, nil
	}
	if n.typ != jsonNumber {
		return nil, at.key(key).errorf("must be a non-negative integer, got %s", n.typ)
	}
	d, ok := scanDecimal(n.text)
	count, isInt := d.integer()
	if !ok || strings.ContainsAny(n.text, "eE") || !isInt || count < 0 || count > math.MaxInt32 {
		return nil, at.key(key).errorf("must be a non-negative integer up to %d, got %s", math.MaxInt32, n.text)
	}
	c := int(count)
	return &c, nil
}

func optionalNumber(v *jsonValue, key string, at jsonPath) (*float64, error) {
	n := v.get(key)
	if n == nil {
		return nil, nil
	}
	if n.typ != jsonNumber {
		return nil, at.key(key).errorf("must be a number, got %s", n.typ)
	}
	f, problem := parseFloatText(n.text)
	if problem != "" {
		return nil, at.key(key).errorf("%s", problem)
	}
	return &f, nil
}

func optionalString(v *jsonValue, key string, at jsonPath) (string, error) {
	s := v.get(key)
	if s == nil {
		return "", nil
	}
	if s.typ != jsonString {
		return "", at.key(key).errorf("must be a string, got %s", s.typ)
	}
	return s.text, nil
}

func isString(v *jsonValue, want string) bool {
	return v != nil && v.typ == jsonString && v.text == want
}

// describe shows a JSON value in a message: strings quoted, other values by
// their type.
func describe(v *jsonValue) string {
	if v.typ == jsonString {
		return quote(v.text)
	}
	return fmt.Sprint(v.typ)
}
