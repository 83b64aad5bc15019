package overlay

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strings"
)

// MCPOr sends a request to /mcp to mcp when it is shaped as the Model
// Context Protocol's (Streamable HTTP), and to server otherwise: an
// OpenCode server has a /mcp of its own (GET: its MCP servers' status;
// POST {name, config}: add one). Without credentials everyone is
// anonymous, so the request's shape decides:
//
//   - MCP headers (Mcp-Session-Id, Mcp-Protocol-Version) → mcp;
//   - GET accepting an event stream (an MCP client's stream) → mcp;
//   - POST accepting both JSON and an event stream, as MCP clients must →
//     mcp; else a POST whose JSON body is a JSON-RPC message or batch →
//     mcp (its body read up to limit bytes and put back);
//   - anything else → server.
func MCPOr(limit int64, mcp, server http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isMCP(r, limit) {
			mcp.ServeHTTP(w, r)
			return
		}
		server.ServeHTTP(w, r)
	})
}

func isMCP(r *http.Request, limit int64) bool {
	if r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Protocol-Version") != "" {
		return true
	}
	json, stream := accepts(r)
	switch r.Method {
	case http.MethodGet:
		return stream
	case http.MethodPost:
		return (json && stream) || jsonRPCBody(r, limit)
	case http.MethodDelete:
		return false // MCP's DELETE names its session in Mcp-Session-Id
	}
	return false
}

// accepts says whether r's Accept names JSON and an event stream.
func accepts(r *http.Request) (json, stream bool) {
	for _, header := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(header, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch strings.ToLower(mt) {
			case "application/json":
				json = true
			case "text/event-stream":
				stream = true
			}
		}
	}
	return json, stream
}

// jsonRPCBody reads r's body (at most limit bytes; a longer one is put
// back whole, unread beyond) and reports whether it is a JSON-RPC message:
// an object with "jsonrpc", or an array (a batch). It puts the body back.
func jsonRPCBody(r *http.Request, limit int64) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, limit))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil {
		return false
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		return true
	case bytes.HasPrefix(trimmed, []byte("{")):
		return topLevelKey(trimmed, "jsonrpc")
	}
	return false
}

type readCloser struct {
	io.Reader
	io.Closer
}
