package bridge

import (
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The relay's fast path reads a stdio frame's top level without decoding
// it, and sends it on with only its "id" replaced: the params and results
// that make up most of a message's bytes pass as they came, with no
// decoding, allocation or encoding on the way. Anything unusual is left to
// the full path (jsonrpc.DecodeMessage, as the SDK's connections do), so
// that the two paths never differ in what they accept: sniff only says yes
// to a plain object whose keys are the JSON-RPC ones, each once and written
// without escapes, "jsonrpc":"2.0", a method without escapes, and an id
// that is an integer the SDK keeps exactly or a string without escapes;
// and of responses, only results.

// envelope is a JSON-RPC message's top level, as spans of its frame.
type envelope struct {
	method []byte // the method's text (unquoted), nil when absent
	params []byte // raw value, nil when absent
	result []byte
	error  []byte
	// id is the raw value, nil when absent (a notification); idAt and
	// idEnd are where it lies in the frame.
	id          []byte
	idAt, idEnd int
}

func (e *envelope) isRequest() bool      { return e.method != nil && e.id != nil }
func (e *envelope) isNotification() bool { return e.method != nil && e.id == nil }

// requestID is the envelope's id as jsonrpc decodes it.
func (e *envelope) requestID() jsonrpc.ID {
	if e.id[0] == '"' {
		id, _ := jsonrpc.MakeID(string(e.id[1 : len(e.id)-1]))
		return id
	}
	n, _ := strconv.ParseInt(string(e.id), 10, 64)
	return ownID(n)
}

// maxExactID bounds the integer ids the fast path takes: float64, which
// the SDK decodes numbers into, holds every integer up to 2^53 exactly.
const maxExactIDDigits = 15

// sniff reads frame's top level, and says whether the fast path may relay
// it (see above). It never fails on any input, valid JSON or not; callers
// pass only frames json.Valid accepts.
func sniff(frame []byte) (envelope, bool) {
	var e envelope
	i := skipSpace(frame, 0)
	if i >= len(frame) || frame[i] != '{' {
		return e, false
	}
	i = skipSpace(frame, i+1)
	version := false
	for i < len(frame) && frame[i] != '}' {
		key, next, ok := plainString(frame, i)
		if !ok {
			return e, false
		}
		i = skipSpace(frame, next)
		if i >= len(frame) || frame[i] != ':' {
			return e, false
		}
		at := skipSpace(frame, i+1)
		end, ok := skipValue(frame, at)
		if !ok {
			return e, false
		}
		value := frame[at:end]
		switch string(key) {
		case "jsonrpc":
			if version || string(value) != `"2.0"` {
				return e, false
			}
			version = true
		case "id":
			if e.id != nil || !plainID(value) {
				return e, false
			}
			e.id, e.idAt, e.idEnd = value, at, end
		case "method":
			text, rest, ok := plainString(value, 0)
			if e.method != nil || !ok || rest != len(value) {
				return e, false
			}
			e.method = text
			if e.method == nil {
				e.method = []byte{} // "": present, but empty
			}
		case "params":
			if e.params != nil {
				return e, false
			}
			e.params = value
		case "result":
			if e.result != nil {
				return e, false
			}
			e.result = value
		case "error":
			if e.error != nil {
				return e, false
			}
			e.error = value
		default:
			return e, false
		}
		i = skipSpace(frame, end)
		if i < len(frame) && frame[i] == ',' {
			i = skipSpace(frame, i+1)
			if i >= len(frame) || frame[i] == '}' {
				return e, false
			}
		}
	}
	if i >= len(frame) || skipSpace(frame, i+1) != len(frame) || !version {
		return e, false
	}
	switch {
	case e.method != nil: // a request or a notification
		return e, e.result == nil && e.error == nil
	default: // a response: an id and a result; errors (rare) go the full
		// path, which reads them as the SDK does, leniently
		return e, e.id != nil && e.params == nil && e.result != nil && e.error == nil
	}
}

// plainID says whether an id's raw value is one the fast path takes.
func plainID(v []byte) bool {
	if len(v) > 0 && v[0] == '"' {
		s, rest, ok := plainString(v, 0)
		return ok && rest == len(v) && s != nil
	}
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > maxExactIDDigits || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainString reads the string at b[i]: its text and the index after it;
// false for anything but a string of printable ASCII without escapes.
// The text of "" is an empty, non-nil slice.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j : j], j + 1, true
		case c == '\\' || c < ' ' || c > '~':
			return nil, i, false
		}
	}
	return nil, i, false
}

// skipValue returns the index after the JSON value at b[i], trusting it to
// be valid (json.Valid has seen the frame), but never reading past b.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipString(b, j)
				if !ok {
					return j, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(b), false
	}
	j := i
scalar:
	for ; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			break scalar
		}
	}
	return j, j > i
}

// skipString returns the index after the string at b[i].
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(b), false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// noID is the id of a frame written as it came.
var noID jsonrpc.ID

// appendID appends id as JSON.
func appendID(dst []byte, id jsonrpc.ID) []byte {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case string:
		quoted, _ := json.Marshal(v)
		return append(dst, quoted...)
	}
	return append(dst, "null"...)
}
