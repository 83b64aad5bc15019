package elicit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxJSONDepth bounds how deeply a requestedSchema may nest. The deepest
// legitimate value (root → properties → property → items → anyOf → entry) is
// six levels; the slack leaves room for annotations such as "examples".
const maxJSONDepth = 32

// jsonType is the type of a decoded JSON value.
type jsonType int

const (
	jsonNull jsonType = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

func (t jsonType) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[t]
}

// member is one key/value pair of a JSON object, kept in document order.
type member struct {
	key   string
	value *jsonValue
}

// jsonValue is a decoded JSON value that, unlike map[string]any, remembers
// the order of object keys and the exact text of numbers.
type jsonValue struct {
	typ     jsonType
	text    string // string value, or the literal text of a number
	boolean bool
	items   []*jsonValue // arrays
	members []member     // objects, in document order, keys unique
}

// get returns the value of key in an object, or nil.
func (v *jsonValue) get(key string) *jsonValue {
	for _, m := range v.members {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// pathStep is one step of a path inside the document: an object key or an
// array index.
type pathStep struct {
	key   string
	index int
	isIdx bool
}

// jsonPath renders the location of a value for error messages, rooted at
// "requestedSchema": short keys that look like identifiers are joined with
// dots, other keys are quoted (and cut) in brackets, indexes are bracketed.
type jsonPath []pathStep

// key and index return a longer path without touching p's backing array, so
// sibling paths built from the same parent never overwrite each other.
func (p jsonPath) key(k string) jsonPath { return append(p[:len(p):len(p)], pathStep{key: k}) }
func (p jsonPath) index(i int) jsonPath {
	return append(p[:len(p):len(p)], pathStep{index: i, isIdx: true})
}

func (p jsonPath) errorf(format string, args ...any) *SchemaError {
	return &SchemaError{Path: p.String(), Rule: fmt.Sprintf(format, args...)}
}

func (p jsonPath) String() string {
	var b strings.Builder
	b.WriteString("requestedSchema")
	for _, s := range p {
		switch {
		case s.isIdx:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case isPlainKey(s.key) && len(s.key) <= quoteLimit:
			b.WriteString("." + s.key)
		default:
			b.WriteString("[" + quote(s.key) + "]")
		}
	}
	return b.String()
}

// isPlainKey reports whether k can be shown after a dot without ambiguity.
func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '$':
		default:
			return false
		}
	}
	return true
}

// decodeOrdered decodes exactly one JSON value from raw. It rejects invalid
// UTF-8, a byte order mark, duplicate object keys, nesting deeper than
// maxJSONDepth and anything after the value.
func decodeOrdered(raw []byte) (*jsonValue, error) {
	var root jsonPath
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, root.errorf("is missing")
	}
	if bytes.HasPrefix(raw, []byte("\xef\xbb\xbf")) {
		return nil, root.errorf("starts with a byte order mark; send plain UTF-8 JSON")
	}
	if !utf8.Valid(raw) {
		return nil, root.errorf("is not valid UTF-8")
	}
	if json.Valid(raw) {
		if v, ok := scanTree(raw); ok {
			return v, nil
		}
	}
	return decodeTree(raw)
}

// decodeTree is decodeOrdered's walk of json.Decoder tokens, which says
// where any problem is. It allocates for every token, so valid documents
// take scanTree instead, and come here only to have a problem named.
func decodeTree(raw []byte) (*jsonValue, error) {
	var root jsonPath
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	d := &treeDecoder{dec: dec}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, root.errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// treeDecoder walks the tokens of a json.Decoder. path is the location of
// the value being decoded, pushed and popped as the walk goes, so that paths
// cost nothing unless an error needs one.
type treeDecoder struct {
	dec  *json.Decoder
	path jsonPath
}

func (d *treeDecoder) token() (json.Token, error) {
	tok, err := d.dec.Token()
	if err == io.EOF {
		return nil, d.path.errorf("invalid JSON: unexpected end of input")
	}
	if err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, d.path.errorf("invalid JSON at byte %d: %s", syn.Offset, syn.Error())
		}
		return nil, d.path.errorf("invalid JSON: %s", err.Error())
	}
	return tok, nil
}

func (d *treeDecoder) value(depth int) (*jsonValue, error) {
	tok, err := d.token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, d.path.errorf("nested more than %d levels deep", maxJSONDepth)
		}
		if t == '{' {
			return d.object(depth + 1)
		}
		return d.array(depth + 1)
	case string:
		return &jsonValue{typ: jsonString, text: t}, nil
	case json.Number:
		return &jsonValue{typ: jsonNumber, text: string(t)}, nil
	case bool:
		return &jsonValue{typ: jsonBool, boolean: t}, nil
	default: // nil: JSON null
		return &jsonValue{typ: jsonNull}, nil
	}
}

func (d *treeDecoder) object(depth int) (*jsonValue, error) {
	obj := &jsonValue{typ: jsonObject}
	var seen map[string]bool // built only for big objects, to keep the check linear
	for d.dec.More() {
		tok, err := d.token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // the decoder only yields strings in key position
		if isDuplicate(obj, &seen, key) {
			return nil, d.path.errorf("duplicate key %s", quote(key))
		}
		d.path = append(d.path, pathStep{key: key})
		v, err := d.value(depth)
		d.path = d.path[:len(d.path)-1]
		if err != nil {
			return nil, err
		}
		obj.members = append(obj.members, member{key: key, value: v})
	}
	if _, err := d.token(); err != nil { // the closing '}'
		return nil, err
	}
	return obj, nil
}

const linearKeyScan = 16

// isDuplicate reports whether obj has key already, keeping seen for big
// objects.
func isDuplicate(obj *jsonValue, seen *map[string]bool, key string) bool {
	if len(obj.members) < linearKeyScan {
		return obj.get(key) != nil
	}
	if *seen == nil {
		*seen = make(map[string]bool, 2*len(obj.members))
		for _, m := range obj.members {
			(*seen)[m.key] = true
		}
	}
	if (*seen)[key] {
		return true
	}
	(*seen)[key] = true
	return false
}

func (d *treeDecoder) array(depth int) (*jsonValue, error) {
	arr := &jsonValue{typ: jsonArray}
	for d.dec.More() {
		d.path = append(d.path, pathStep{index: len(arr.items), isIdx: true})
		v, err := d.value(depth)
		d.path = d.path[:len(d.path)-1]
		if err != nil {
			return nil, err
		}
		arr.items = append(arr.items, v)
	}
	if _, err := d.token(); err != nil { // the closing ']'
		return nil, err
	}
	return arr, nil
}
