package bridge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/questiond/questiond/internal/bridge"
)

// FuzzEventStream answers a call with an arbitrary event stream: whatever
// an upstream sends, Read hands out messages and then the call's response
// (the server's, or an error when the stream ended without one) or an
// error, never a message over the limit, never hangs and never panics.
func FuzzEventStream(f *testing.F) {
	for _, seed := range []string{
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		": keep-alive\n\nid: 7\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n",
		"data: {\"jsonrpc\":\"2.0\",\n data: \"id\":1,\"result\":{}}\n\n",
		"event: prime\nid: abc\ndata:\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"elicitation/create\",\"params\":{}}\n\ndata: not json\n\n",
		"data: " + strings.Repeat("x", 5000) + "\n\n",
		"id: a\x00b\ndata: {}\n\n",
	} {
		f.Add(seed)
	}
	var mu sync.Mutex
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed) // no stream to resume
			return
		}
		mu.Lock()
		b := body
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(b))
	}))
	defer srv.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	f.Fuzz(func(t *testing.T, stream string) {
		mu.Lock()
		body = stream
		mu.Unlock()
		const most = 4096
		conn, err := (&bridge.StreamableHTTP{URL: srv.URL, MaxMessageBytes: most}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/list"}); err != nil {
			t.Fatal(err)
		}
		for {
			msg, err := conn.Read(ctx)
			if ctx.Err() != nil {
				t.Fatalf("Read hung on stream %q", stream)
			}
			if err != nil {
				return
			}
			if data, _ := jsonrpc.EncodeMessage(msg); len(data) > most+100 {
				t.Fatalf("Read returned %d bytes, over the limit of %d", len(data), most)
			}
			if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
				return
			}
		}
	})
}
