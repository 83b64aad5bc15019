package bridge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/questiond/questiond/internal/bridge"
)

// A server on 2025-11-25 may open an answer's event stream with an event
// that has an id and empty data (to prime a reconnection), as the
// TypeScript SDK's server does: it carries no message and is skipped.
func TestAnEventWithEmptyDataIsSkipped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: prime-1\ndata: \n\n")
		_, _ = io.WriteString(w, "event: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n\n")
	}))
	defer srv.Close()
	conn, err := (&bridge.StreamableHTTP{URL: srv.URL}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID(float64(1))
	if err := conn.Write(t.Context(), &jsonrpc.Request{ID: id, Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}`)}); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.Read(t.Context())
	if err != nil {
		t.Fatalf("reading the answer after a priming event: %v", err)
	}
	if res, ok := msg.(*jsonrpc.Response); !ok || res.ID.Raw() != int64(1) || res.Error != nil {
		t.Fatalf("read %#v, want initialize's result", msg)
	}
}
