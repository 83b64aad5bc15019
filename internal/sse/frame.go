package sse

import (
	"bytes"
	"encoding/json"
	"fmt"

	r3 "github.com/r3labs/sse/v2"
)

// encodeEvent returns e as one line of compact JSON with the keys in
// OpenCode's order: id, type, properties. The properties are compacted and
// checked on the way, so a caller's indented JSON cannot break the framing.
func encodeEvent(e Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // OpenCode sends <, > and & as they are
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("%w: encoding %q: %w", ErrInvalidEvent, e.Type, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeGlobal wraps an encoded event in the /global/event envelope. Events
// without a directory (server.connected, server.heartbeat and the like) carry
// only the payload, as OpenCode's do.
func encodeGlobal(directory, project string, event []byte) []byte {
	out := make([]byte, 0, len(event)+len(directory)+len(project)+40)
	out = append(out, '{')
	if directory != "" {
		out = append(out, `"directory":`...)
		out = appendJSONString(out, directory)
		out = append(out, `,"project":`...)
		out = appendJSONString(out, project)
		out = append(out, ',')
	}
	out = append(out, `"payload":`...)
	out = append(out, event...)
	return append(out, '}')
}

func appendJSONString(dst []byte, s string) []byte {
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// frame is the exact bytes of one event on the wire.
func frame(data []byte) []byte {
	out := make([]byte, 0, len(data)+8)
	out = append(out, "data: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// endComment marks the end of a stream when the broker closes. It travels
// through r3labs as a comment, which is never sent to a client.
const endComment = "questiond: end of stream"

var endMarker = []byte(": " + endComment + "\n\n") // as r3labs writes it

func endOfStream() *r3.Event { return &r3.Event{Comment: []byte(endComment)} }

var (
	dataField = []byte("data:")
	newline   = []byte("\n")
)

// frameFrom turns what r3labs wrote for one event (an "id:" line that it
// always writes, the "data:" line, maybe "event:", "retry:" and comment lines,
// then a blank line) into OpenCode's framing: the data lines and a blank line,
// nothing else. It returns nil when there is no data, such as for a comment.
func frameFrom(raw []byte) []byte {
	// What r3labs writes for our events is one "id: \n" line, one data line
	// and the blank line; the frame is then a tail of raw, no copy needed.
	if _, rest, ok := bytes.Cut(raw, newline); ok && bytes.HasPrefix(rest, dataField) {
		if line, tail, ok := bytes.Cut(rest, newline); ok && string(tail) == "\n" && len(line) > 0 {
			return rest
		}
	}
	var out []byte
	for rest := raw; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, newline)
		if bytes.HasPrefix(line, dataField) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	if out == nil {
		return nil
	}
	return append(out, '\n')
}
