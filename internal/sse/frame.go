package sse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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

// frame is one event on the wire, already cut as one HTTP/1.1 chunk:
// "<size in hex>\r\n" "data: <data>\n\n" "\r\n". A stream on a connection of
// its own writes it as it is; one served through a ResponseWriter writes its
// payload and lets net/http add the same chunk framing.
func frame(data []byte) []byte {
	size := len("data: ") + len(data) + len("\n\n")
	out := make([]byte, 0, size+16)
	out = strconv.AppendInt(out, int64(size), 16)
	out = append(out, "\r\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n\r\n"...)
}

// chunk is a whole frame from elsewhere (a Feed), cut as one HTTP/1.1
// chunk as frame does.
func chunk(f []byte) []byte {
	out := make([]byte, 0, len(f)+20)
	out = strconv.AppendInt(out, int64(len(f)), 16)
	out = append(out, "\r\n"...)
	out = append(out, f...)
	return append(out, "\r\n"...)
}

// payload is the event text of a frame, without its chunk framing.
func payload(f []byte) []byte {
	return f[bytes.IndexByte(f, '\n')+1 : len(f)-len("\r\n")]
}

// lastChunk ends a chunked response.
var lastChunk = []byte("0\r\n\r\n")

// frames is one event framed for both kinds of stream. Every subscriber of
// a kind shares the same bytes, which nobody changes once built.
type frames struct {
	event  []byte // /event
	global []byte // /global/event
	note   string // Message.Note
}

// framesOf encodes m once per kind of stream, for a publish that reaches
// both.
func (b *Broker) framesOf(m Message) (frames, error) {
	event, err := encoded(m)
	if err != nil {
		return frames{}, err
	}
	return frames{event: frame(event), global: frame(encodeGlobal(m.Directory, b.opts.Project, event)), note: m.Note}, nil
}

// frameFor encodes m for one subscriber of sc only, as its replay needs.
func (b *Broker) frameFor(sc scope, m Message) ([]byte, error) {
	event, err := encoded(m)
	if err != nil {
		return nil, err
	}
	if sc.global {
		return frame(encodeGlobal(m.Directory, b.opts.Project, event)), nil
	}
	return frame(event), nil
}

// encoded checks m's event, gives it an id if it has none, and encodes it.
func encoded(m Message) ([]byte, error) {
	if err := prepare(&m.Event); err != nil {
		return nil, err
	}
	return encodeEvent(m.Event)
}

// of is the frame for a subscriber of sc.
func (f frames) of(sc scope) []byte {
	if sc.global {
		return f.global
	}
	return f.event
}
