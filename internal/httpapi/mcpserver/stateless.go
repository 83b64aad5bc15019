package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/mcptasks"
)

// Stateless requests: MCP 2026-07-28 (SEP-2575) has no initialize and no
// session; every request carries its protocol version (the
// MCP-Protocol-Version header and _meta["io.modelcontextprotocol/protocolVersion"])
// and its client's capabilities in _meta. go-sdk serves that protocol only
// from a handler with StreamableHTTPOptions.Stateless, and serves the older
// protocols only from a stateful one, so Endpoint.Serve routes each request
// to one of the two by statelessRequest. See doc.go for the rule.

// protocolStateless is the first MCP protocol version without sessions.
// Versions are dates, compared as strings, as the SDK compares them.
const protocolStateless = "2026-07-28"

// statelessRequest reports whether r is an MCP 2026-07-28 request, for the
// stateless handler: it names no MCP session and either its
// MCP-Protocol-Version header is 2026-07-28 or later (a version questiond does
// not know included: the stateless handler answers it with
// UnsupportedProtocolVersionError and the supported list), or its one
// JSON-RPC message carries _meta["io.modelcontextprotocol/protocolVersion"]
// (the stateless handler then tells a client that sent no or another header
// that they must match). Everything else — every request naming an
// Mcp-Session-Id, an initialize of any older version, batches — is served as
// before.
func statelessRequest(r *http.Request, post *mcpPost) bool {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= protocolStateless
	}
	return r.Method == http.MethodPost && post != nil && post.request != nil && hasMetaVersion(post.request.Params)
}

// hasMetaVersion reports whether params carry a SEP-2575 protocol version in
// _meta.
func hasMetaVersion(params json.RawMessage) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return false
	}
	_, ok := p.Meta[mcp.MetaKeyProtocolVersion]
	return ok
}

// serveStateless serves a stateless request: a POST gets a server of its
// own, for the questiond session it names (as a connecting stateful request
// names one: ?session= or X-Questiond-Session) or else its agent's inbox,
// built for this one request and gone with its answer. Nothing counts
// against the MCP session limits: no session outlives the request (see
// docs/mcp.md). GET and DELETE get the SDK's 405 (Allow: POST): there is no
// stream or session to open or end.
func (m *Endpoint) serveStateless(w http.ResponseWriter, r *http.Request, agent string, post *mcpPost, refused *rpcRefusal) {
	sw := &sdkErrorWriter{ResponseWriter: w, post: post}
	if r.Method == http.MethodPost {
		if refused == nil && post != nil && post.request != nil {
			if err := mcptasks.CheckRoutingHeader(post.request.Method, post.request.Params, r.Header); err != nil {
				// The SDK checks Mcp-Name only for the methods it knows.
				refused = &rpcRefusal{http.StatusBadRequest, post.request.ID, mcp.CodeHeaderMismatch, err.Error()}
			}
		}
		if refused != nil {
			writeRPCRefusal(w, refused)
			return
		}
		conn, err := m.connecting(r, agent, true)
		if err != nil {
			m.writeError(w, r, err)
			return
		}
		conn.stateless, conn.beat = true, sw.comment
		r = r.WithContext(context.WithValue(r.Context(), mcpConnectingKey{}, conn))
	}
	m.stateless.ServeHTTP(sw, r)
	sw.finish(m, r)
}

// notOffered are the methods go-sdk answers (with empty lists) although
// questiond's server declares neither prompts nor resources nor completion.
var notOffered = map[string]bool{
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"completion/complete": true,
}

// offeredOnly refuses, on a stateless request, the methods of capabilities
// questiond does not declare, as 2026-07-28 asks: -32601, which the SDK
// sends with 404. (Sessions keep their answers as before.)
func offeredOnly(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if notOffered[method] {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %q is not a method questiond's MCP server offers", method)}
		}
		return next(ctx, method, req)
	}
}
