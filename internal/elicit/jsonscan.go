package elicit

import "encoding/json"

// scanTree builds the tree of raw, a document json.Valid accepted, straight
// from its bytes: the same tree as decodeTree, without json.Decoder's
// allocation per token. It gives up (ok false) on what decodeTree refuses in
// valid JSON — a duplicate key, nesting deeper than maxJSONDepth — so that
// decodeTree can say where.
func scanTree(raw []byte) (v *jsonValue, ok bool) {
	s := treeScanner{raw: raw}
	v, ok = s.value(0)
	s.skipSpace()
	return v, ok && s.pos == len(raw)
}

// treeScanner reads a valid JSON document; it checks only what json.Valid
// does not.
type treeScanner struct {
	raw []byte
	pos int
}

func (s *treeScanner) skipSpace() {
	for s.pos < len(s.raw) {
		switch s.raw[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value reads the value at s.pos; depth counts the arrays and objects
// around it, as in treeDecoder.value.
func (s *treeScanner) value(depth int) (*jsonValue, bool) {
	s.skipSpace()
	switch s.raw[s.pos] {
	case '{', '[':
		if depth >= maxJSONDepth {
			return nil, false
		}
		if s.raw[s.pos] == '{' {
			return s.object(depth + 1)
		}
		return s.array(depth + 1)
	case '"':
		text, ok := s.string()
		return &jsonValue{typ: jsonString, text: text}, ok
	case 't':
		s.pos += len("true")
		return &jsonValue{typ: jsonBool, boolean: true}, true
	case 'f':
		s.pos += len("false")
		return &jsonValue{typ: jsonBool}, true
	case 'n':
		s.pos += len("null")
		return &jsonValue{typ: jsonNull}, true
	}
	start := s.pos
	for s.pos < len(s.raw) && isNumberByte(s.raw[s.pos]) {
		s.pos++
	}
	// The literal text, as json.Decoder.UseNumber gives it.
	return &jsonValue{typ: jsonNumber, text: string(s.raw[start:s.pos])}, true
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// string reads the string at s.pos. Without escapes its bytes are its text
// (the document is valid UTF-8 without control characters); with escapes
// encoding/json unquotes it, so both decoders agree on every escape.
func (s *treeScanner) string() (string, bool) {
	start, escaped := s.pos, false
	end := start + 1
	for s.raw[end] != '"' {
		if s.raw[end] == '\\' {
			escaped = true
			end++
		}
		end++
	}
	s.pos = end + 1
	if !escaped {
		return string(s.raw[start+1 : end]), true
	}
	var text string
	err := json.Unmarshal(s.raw[start:end+1], &text)
	return text, err == nil
}

func (s *treeScanner) object(depth int) (*jsonValue, bool) {
	obj := &jsonValue{typ: jsonObject}
	var seen map[string]bool
	s.pos++ // '{'
	s.skipSpace()
	if s.raw[s.pos] == '}' {
		s.pos++
		return obj, true
	}
	for {
		s.skipSpace()
		key, ok := s.string()
		if !ok || isDuplicate(obj, &seen, key) {
			return nil, false
		}
		s.skipSpace()
		s.pos++ // ':'
		v, ok := s.value(depth)
		if !ok {
			return nil, false
		}
		obj.members = append(obj.members, member{key: key, value: v})
		s.skipSpace()
		s.pos++ // ',' or '}'
		if s.raw[s.pos-1] == '}' {
			return obj, true
		}
	}
}

func (s *treeScanner) array(depth int) (*jsonValue, bool) {
	arr := &jsonValue{typ: jsonArray}
	s.pos++ // '['
	s.skipSpace()
	if s.raw[s.pos] == ']' {
		s.pos++
		return arr, true
	}
	for {
		v, ok := s.value(depth)
		if !ok {
			return nil, false
		}
		arr.items = append(arr.items, v)
		s.skipSpace()
		s.pos++ // ',' or ']'
		if s.raw[s.pos-1] == ']' {
			return arr, true
		}
	}
}
