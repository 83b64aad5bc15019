package bridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The headers of a request to an HTTP upstream.

// Header names of the Streamable HTTP transport.
const (
	headerSession     = "Mcp-Session-Id"
	headerProtocol    = "MCP-Protocol-Version"
	headerMethod      = "Mcp-Method" // protocol 2026-07-28 (SEP-2243)
	headerName        = "Mcp-Name"
	headerLastEventID = "Last-Event-ID"
)

// statelessProtocol is the first protocol version without the standalone
// GET stream, and the first whose requests name their method in headers.
const statelessProtocol = "2026-07-28"

// request is an HTTP request to the server with the headers every request
// carries: the configured ones, the session and the protocol version, and
// on protocol 2026-07-28 the method and name of msg.
func (c *httpConn) request(ctx context.Context, method string, body io.Reader, msg jsonrpc.Message) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, body)
	if err != nil {
		return nil, fmt.Errorf("a request to the MCP server at %s: %w", c.shown, err)
	}
	for k, vs := range c.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	c.mu.Lock()
	session, protocol := c.session, c.protocol
	c.mu.Unlock()
	r, _ := msg.(*jsonrpc.Request)
	if v := requestProtocol(r); v != "" {
		protocol = v // a 2026-07-28 request names its own
	}
	if protocol != "" {
		req.Header.Set(headerProtocol, protocol)
	}
	if session != "" {
		req.Header.Set(headerSession, session)
	}
	if r != nil && protocol >= statelessProtocol {
		req.Header.Set(headerMethod, r.Method)
		if name, ok := requestName(r); ok {
			req.Header.Set(headerName, headerValue(name))
		}
		if r.Method == methodCallTool {
			for k, v := range c.paramHeaders(r) {
				req.Header.Set(k, v)
			}
		}
	}
	return req, nil
}

// requestProtocol is the protocol version a 2026-07-28 request carries in
// its _meta ("" for none).
func requestProtocol(r *jsonrpc.Request) string {
	if r == nil {
		return ""
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v)
	return v
}

// requestName is what a 2026-07-28 request's Mcp-Name header names: the
// tool, prompt or resource.
func requestName(r *jsonrpc.Request) (string, bool) {
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	switch r.Method {
	case "tools/call", "prompts/get":
		if json.Unmarshal(r.Params, &p) == nil {
			return p.Name, true
		}
	case "resources/read":
		if json.Unmarshal(r.Params, &p) == nil {
			return p.URI, true
		}
	}
	return "", false
}

// headerValue is a name as an Mcp-Name header carries it: as it is when it
// is printable ASCII, otherwise base64 in the =?base64?…?= form of
// SEP-2243.
func headerValue(s string) string {
	plain := s == "" || (s[0] != ' ' && s[len(s)-1] != ' ' &&
		!(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")))
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}
