package httpapi

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// firstDuplicateKey returns the first key that repeats among the members of
// the JSON object raw, and whether one does. Only raw's own members are
// compared; a raw that is not a valid object has none (its decoding says
// what is wrong). encoding/json keeps the last of repeated keys, so without
// this check an agent's body could mean one thing to questiond and another
// to a proxy or a log reader that keeps the first.
//
// It runs on every agent request before the body is decoded, so it scans
// raw by hand, once, without building tokens or values: with a
// json.Decoder it cost 1.5–2.5 % of the server's CPU. Keys are compared as
// encoding/json reads them ("a" and "\u0061" are one key). The scan itself
// is lax (inside values it only counts brackets), so a repeated key counts
// only in a body that is valid JSON, which is checked then and only then;
// FuzzFirstDuplicateKey holds it to json.Decoder's answer on valid JSON
// and to "none" on anything else.
func firstDuplicateKey(raw []byte) (string, bool) {
	key, found := scanDuplicateKey(raw)
	if !found || !json.Valid(raw) {
		return "", false
	}
	return key, true
}

// scanDuplicateKey is firstDuplicateKey without the check that raw is
// valid JSON.
func scanDuplicateKey(raw []byte) (string, bool) {
	s := keyScanner{data: raw}
	if s.skipSpace(); !s.consume('{') {
		return "", false
	}
	var seen [][]byte // objects have few keys: a slice beats a map
	for s.skipSpace(); !s.consume('}'); {
		if len(seen) > 0 {
			if !s.consume(',') {
				return "", false
			}
			s.skipSpace()
		}
		key, ok := s.key()
		if !ok {
			return "", false
		}
		for _, k := range seen {
			if bytes.Equal(k, key) {
				return string(key), true
			}
		}
		seen = append(seen, key)
		if s.skipSpace(); !s.consume(':') || !s.skipValue() {
			return "", false
		}
		s.skipSpace()
	}
	return "", false
}

// keyScanner walks JSON text just far enough to read an object's keys.
type keyScanner struct {
	data []byte
	pos  int
}

func (s *keyScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

func (s *keyScanner) consume(c byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// key reads a string at pos and returns it as encoding/json reads it: a
// plain one as it is, one with escapes or bytes that are not UTF-8
// (which decode to U+FFFD) through the decoder.
func (s *keyScanner) key() ([]byte, bool) {
	start := s.pos
	escaped, ok := s.skipString()
	if !ok {
		return nil, false
	}
	text := s.data[start:s.pos]
	if !escaped && utf8.Valid(text) {
		return text[1 : len(text)-1], true
	}
	var key string
	if json.Unmarshal(text, &key) != nil {
		return nil, false
	}
	return []byte(key), true
}

// skipString moves past the string at pos, reporting whether it holds an
// escape. The escapes themselves are checked when the key is unescaped, and
// a value's by the body's own decoding.
func (s *keyScanner) skipString() (escaped, ok bool) {
	if !s.consume('"') {
		return false, false
	}
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case '"':
			s.pos++
			return escaped, true
		case '\\':
			escaped = true
			s.pos += 2
		default:
			s.pos++
		}
	}
	return false, false
}

// skipValue moves past the value at pos (after any space): strings whole,
// and arrays and objects by counting their brackets, outside strings.
func (s *keyScanner) skipValue() bool {
	s.skipSpace()
	depth := 0
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case '"':
			if _, ok := s.skipString(); !ok {
				return false
			}
			if depth == 0 {
				return true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return true // the end of the enclosing object: a scalar ended here
			}
			depth--
			if depth == 0 {
				s.pos++
				return true
			}
		case ',':
			if depth == 0 {
				return true
			}
		}
		s.pos++
	}
	return depth == 0
}

// refuseDuplicateKeys is a 400 naming the first repeated key of the object
// raw, found at prefix (a path like `["params"]`, or "" for the body).
func refuseDuplicateKeys(raw []byte, prefix string) error {
	if key, ok := firstDuplicateKey(raw); ok {
		return wire.NewBadRequest(wire.KindPayload, "Duplicate key %q: each key may appear once in an object\n  at %s[%q]", key, prefix, key)
	}
	return nil
}
