package overlay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxFrameBytes bounds one upstream frame unless the caller says
// otherwise. OpenCode puts whole tool outputs and file diffs in one
// message.part.updated frame, so it is generous; what it guards against is
// a stream that never ends its frame.
const DefaultMaxFrameBytes = 16 << 20

// ErrFrameTooLarge ends an upstream stream whose frame grew beyond the
// reader's bound before its blank line came.
var ErrFrameTooLarge = errors.New("upstream event frame too large")

// readChunk is how much FrameReader asks its source for at a time.
const readChunk = 32 << 10

// FrameReader cuts an upstream Server-Sent Events stream (OpenCode's GET
// /event or /global/event) into whole frames, each exactly as it came: its
// lines (data, event, id, retry, comments, anything) up to and including the
// blank line that ends it. Lines end with "\n", "\r\n" or "\r".
//
// Two things are dropped, neither of which a client can tell apart from the
// original: blank lines outside a frame (they dispatch nothing), and the
// "\n" of a "\r\n" whose "\r" ended a frame when the "\n" had not arrived
// yet (the frame is not held back waiting for it). A frame cut short by the
// end of the stream is not returned: SSE clients discard it too.
//
// A FrameReader is a sse.Feed: Close stops a Next under way by closing the
// source, so the source should be an upstream response body. Next is for
// one goroutine; Close may be called from any, at any time, more than once.
type FrameReader struct {
	src   io.ReadCloser
	max   int
	store []byte // what src is read into
	buf   []byte // bytes of store not scanned yet
	err   error  // sticky: once Next failed, it fails the same way

	closeOnce sync.Once
	closeErr  error
}

// NewFrameReader reads frames from src, none larger than maxBytes (0 means
// DefaultMaxFrameBytes).
func NewFrameReader(src io.ReadCloser, maxBytes int) *FrameReader {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFrameBytes
	}
	return &FrameReader{src: src, max: maxBytes}
}

// Next returns the next whole frame; the slice is the caller's to keep. At
// the end of the stream it returns io.EOF, or io.ErrUnexpectedEOF if a frame
// was cut short; a frame over the bound returns ErrFrameTooLarge; a failed
// read returns its error. Any error is final.
func (r *FrameReader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	var frame []byte
	var lines lineState
	for {
		if len(r.buf) == 0 {
			if err := r.fill(); err != nil {
				r.err = endError(err, len(frame) > 0)
				return nil, r.err
			}
			continue
		}
		if len(frame) == 0 {
			// Blank lines outside a frame dispatch nothing: dropped, and
			// with them the "\n" of a "\r\n" that ended the last frame
			// but came after it.
			r.buf = r.buf[leadingBlank(r.buf):]
			if len(r.buf) == 0 {
				continue
			}
		}
		n, ended := lines.scan(r.buf)
		if ended && r.buf[n-1] == '\r' && n < len(r.buf) && r.buf[n] == '\n' {
			n++ // the "\n" of the "\r\n" that ends the frame
		}
		if len(frame)+n > r.max {
			r.err = fmt.Errorf("%w: over %d bytes", ErrFrameTooLarge, r.max)
			return nil, r.err
		}
		frame = append(frame, r.buf[:n]...)
		r.buf = r.buf[n:]
		if ended {
			return frame, nil
		}
	}
}

// lineState is where a scan of a frame is: how long the line under way is,
// and whether the last line ended with "\r" (a "\n" next belongs to it).
type lineState struct {
	lineLen int
	prevCR  bool
}

// scan looks for the blank line that ends the frame in buf, and returns how
// many bytes of buf belong to the frame and whether they end it. The blank
// line's own end is the last byte taken: when it is "\r", the caller looks
// for its "\n".
func (st *lineState) scan(buf []byte) (int, bool) {
	i := 0
	for i < len(buf) {
		if st.prevCR {
			st.prevCR = false
			if buf[i] == '\n' {
				i++
				continue
			}
		}
		j := indexLineEnd(buf[i:])
		if j < 0 {
			st.lineLen += len(buf) - i
			return len(buf), false
		}
		blank := st.lineLen == 0 && j == 0
		i += j
		c := buf[i]
		i++
		st.lineLen = 0
		if blank {
			return i, true
		}
		st.prevCR = c == '\r'
	}
	return i, false
}

// leadingBlank is the length of the line ends at the start of buf.
func leadingBlank(buf []byte) int {
	i := 0
	for i < len(buf) && (buf[i] == '\n' || buf[i] == '\r') {
		i++
	}
	return i
}

// fill reads the next chunk from src.
func (r *FrameReader) fill() error {
	if r.store == nil {
		r.store = make([]byte, readChunk)
	}
	n, err := r.src.Read(r.store)
	r.buf = r.store[:n]
	if n > 0 || err == nil {
		return nil // a Read of nothing without an error: try again
	}
	return err
}

func endError(err error, partial bool) error {
	if errors.Is(err, io.EOF) {
		if partial {
			return io.ErrUnexpectedEOF
		}
		return io.EOF
	}
	return fmt.Errorf("reading upstream event stream: %w", err)
}

// Close closes the source, which makes a Next under way return soon.
func (r *FrameReader) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.src.Close() })
	return r.closeErr
}

// Data returns the data of frame as an SSE client dispatches it: the
// values of its data lines joined with "\n". For a frame of one data line
// (all of OpenCode's) it is a part of frame itself, not a copy.
func Data(frame []byte) []byte {
	var data []byte
	count := 0
	for len(frame) > 0 {
		var line []byte
		line, frame = cutLine(frame)
		name, value, found := bytes.Cut(line, []byte(":"))
		if string(name) != "data" {
			continue // another field, or a comment (no name)
		}
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch count++; count {
		case 1:
			data = value
		case 2:
			data = append(append(append([]byte(nil), data...), '\n'), value...)
		default:
			data = append(append(data, '\n'), value...)
		}
	}
	return data
}

// cutLine returns b's first line without its end, and what follows.
func cutLine(b []byte) (line, rest []byte) {
	i := indexLineEnd(b)
	if i < 0 {
		return b, nil
	}
	rest = b[i+1:]
	if b[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	return b[:i], rest
}

// Peeked is what routing needs to know of one upstream event frame.
type Peeked struct {
	// Type is the event's type: payload.type on /global/event,
	// type on /event ("" for a frame that is not an OpenCode event, such as
	// a comment).
	Type string
	// Directory is the /global/event envelope's directory ("" on /event,
	// and for events OpenCode ties to no directory).
	Directory string
	// SessionID is properties.sessionID: the session of a question.*,
	// permission.* or session.status event.
	SessionID string
	// ID is properties.id: the request id of question.asked and
	// permission.asked.
	ID string
	// RequestID is properties.requestID: the request id of
	// question.replied, question.rejected and permission.replied.
	RequestID string
}

// Peek decodes what routing needs from frame, of either stream; ok is false
// when the frame's data is not JSON, or not an object. A field of another
// JSON type than expected reads as "" without hiding the others. Nothing of
// the rest of the event is copied (a tool output of megabytes is scanned
// only). Keys match as encoding/json matches them: case folded, the last
// of duplicates winning.
func Peek(frame []byte) (p Peeked, ok bool) {
	var w struct {
		Directory string     `json:"directory"`
		Payload   *peekEvent `json:"payload"`
		peekEvent
	}
	data := bytes.TrimLeft(Data(frame), " \t\r\n")
	if len(data) == 0 || data[0] != '{' {
		return Peeked{}, false
	}
	if err := json.Unmarshal(data, &w); err != nil {
		if _, mistyped := errors.AsType[*json.UnmarshalTypeError](err); !mistyped {
			return Peeked{}, false
		}
	}
	e := w.peekEvent
	if w.Payload != nil {
		e = *w.Payload
	}
	return Peeked{
		Type:      e.Type,
		Directory: w.Directory,
		SessionID: e.Properties.SessionID,
		ID:        e.Properties.ID,
		RequestID: e.Properties.RequestID,
	}, true
}

// peekEvent is the part of an OpenCode bus event Peek reads.
type peekEvent struct {
	Type       string `json:"type"`
	Properties struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionID"`
		RequestID string `json:"requestID"`
	} `json:"properties"`
}

// indexLineEnd is the index of the first "\r" or "\n" in b, or -1. Two
// IndexByte calls beat one IndexAny: they are vectorised, and lines of
// upstream frames run to megabytes.
func indexLineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}
