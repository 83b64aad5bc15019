package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzSniff holds the fast path to the full one: whatever frame a host or
// an upstream sends, sniff never panics, and a frame it takes decodes (as
// jsonrpc does for the full path) to the message its envelope says, and
// with its id rewritten to the same message under the new id. So the fast
// path never relays what the full path would refuse or read otherwise.
func FuzzSniff(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"method":"tools/call","params":{"_meta":{"progressToken":"p"}},"jsonrpc":"2.0","id":"a-1"}`,
		`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"hi \"there\" \u00e9"}]}}`,
		`{"jsonrpc":"2.0","id":-3,"error":{"code":-32602,"message":"no","data":[1,{"a":"}"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		` { "jsonrpc" : "2.0" , "id" : 0 , "result" : { } } `,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`,
		`{"jsonrpc":"2.0","id":1e3,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`,
		`{"jsonrpc":"2.0","\u0069d":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\u00e9","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"","extra":true}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"ping",}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}}`,
		`"text"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		e, ok := sniff(frame)
		if !ok || !json.Valid(frame) {
			return // the full path's, or never a frame (lineConn passes only valid JSON)
		}
		want := message(e)
		got, err := jsonrpc.DecodeMessage(frame)
		if err != nil {
			t.Fatalf("sniff took %q, which jsonrpc refuses: %v", frame, err)
		}
		if !sameMessage(got, want) {
			t.Fatalf("sniff read %q as %#v, jsonrpc as %#v", frame, want, got)
		}
		if e.id == nil {
			return
		}
		for _, id := range []jsonrpc.ID{ownID(42), mustID(t, "own \"id\" é")} {
			rewritten := append(appendID(bytes.Clone(frame[:e.idAt]), id), frame[e.idEnd:]...)
			got, err := jsonrpc.DecodeMessage(rewritten)
			if err != nil {
				t.Fatalf("%q with id %v: %v", frame, id.Raw(), err)
			}
			switch m := want.(type) {
			case *jsonrpc.Request:
				m.ID = id
			case *jsonrpc.Response:
				m.ID = id
			}
			if !sameMessage(got, want) {
				t.Fatalf("%q with id %v read as %#v, want %#v", frame, id.Raw(), got, want)
			}
		}
	})
}

// message is the message an envelope says its frame holds.
func message(e envelope) jsonrpc.Message {
	var id jsonrpc.ID
	if e.id != nil {
		id = e.requestID()
	}
	if e.method != nil {
		return &jsonrpc.Request{ID: id, Method: string(e.method), Params: e.params}
	}
	return &jsonrpc.Response{ID: id, Result: e.result}
}

func sameMessage(a, b jsonrpc.Message) bool {
	switch a := a.(type) {
	case *jsonrpc.Request:
		b, ok := b.(*jsonrpc.Request)
		return ok && a.ID == b.ID && a.Method == b.Method && sameJSON(a.Params, b.Params)
	case *jsonrpc.Response:
		b, ok := b.(*jsonrpc.Response)
		return ok && a.ID == b.ID && sameJSON(a.Result, b.Result) && a.Error == nil && b.Error == nil
	}
	return false
}

// sameJSON compares raw values as JSON texts, but for white space (absent
// and null alike).
func sameJSON(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if len(a) > 0 && json.Compact(&x, a) != nil || len(b) > 0 && json.Compact(&y, b) != nil {
		return false
	}
	if x.String() == "null" {
		x.Reset()
	}
	if y.String() == "null" {
		y.Reset()
	}
	return x.String() == y.String()
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// FuzzFrames reads an arbitrary stream as the bridge reads a host's or an
// upstream's stdio: it never panics or hangs, hands out only valid JSON,
// never more than the limit, each on one line, and reads a stream of messages one a line (or
// a value spread over lines) as the SDK's connections do.
func FuzzFrames(f *testing.F) {
	for _, seed := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n",
		"\n\r\n  {\"a\":[1,2]}\r\n",
		"{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\"s\": \"}\\\"{\"}\n}\n{\"b\":1}",
		"{\"a\":1} {\"b\":2}\n",
		"{\"a\":\n",
		"}\n",
		"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]\n",
		"not json\n",
		strings.Repeat("[", 100) + "\n" + strings.Repeat("]", 100) + "\n",
	} {
		f.Add([]byte(seed), 16)
	}
	f.Fuzz(func(t *testing.T, stream []byte, limit int) {
		if limit < 1 {
			limit = 1
		}
		c := newLineConn(bytes.NewReader(stream), io.Discard, true, func() error { return nil })
		c.in = bufio.NewReaderSize(bytes.NewReader(stream), 16) // reads of every size
		c.max = limit % (len(stream) + 2)
		if c.max < 1 {
			c.max = mcp.DefaultMaxLineLength
		}
		var frames [][]byte
		for range len(stream) + 1 {
			frame, err := c.readFrame(t.Context())
			if err != nil {
				break
			}
			if !json.Valid(frame) || len(frame) > c.max || bytes.ContainsAny(frame, "\r\n") {
				t.Fatalf("frame %q of %q: not valid JSON, over %d bytes, or more than one line", frame, stream, c.max)
			}
			frames = append(frames, bytes.Clone(frame))
		}
		if _, err := c.readFrame(t.Context()); err == nil {
			t.Fatalf("%q: more frames than bytes", stream)
		}
		// The SDK's reading: one JSON value after another, each ended by a
		// line break or the end.
		if c.max != mcp.DefaultMaxLineLength {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(stream))
		for i := 0; ; i++ {
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				if i < len(frames) {
					t.Fatalf("%q: frame %d %q, which a JSON decoder does not read", stream, i, frames[i])
				}
				return
			}
			if i >= len(frames) {
				return // the bridge stopped earlier: trailing data on a line the decoder may take
			}
			if !sameJSON(v, frames[i]) {
				t.Fatalf("%q: frame %d is %q, a JSON decoder reads %q", stream, i, frames[i], v)
			}
		}
	})
}
