package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// JSON-RPC refusals on POST /mcp. The MCP SDK answers a body that is not
// JSON, not JSON-RPC, or names a method it does not know with a plain-text
// 400; MCP clients expect JSON-RPC errors. Bodies that are not JSON-RPC are
// refused here, before the SDK reads them, with HTTP 400 (MCP's Streamable
// HTTP transport: input the server cannot accept gets an HTTP error status,
// the body a JSON-RPC error response without an id). An unknown method is
// only known from the SDK's refusal, which sdkErrorWriter.finish turns into
// JSON-RPC (see methodNotFound).

// mcpPost is what checkMCPBody learned of a POST /mcp body the SDK goes on
// to read.
type mcpPost struct {
	batch   bool
	request *jsonrpc.Request // the one message, when it is a request or notification
}

// rpcRefusal is a JSON-RPC error response with its HTTP status.
type rpcRefusal struct {
	status int
	id     jsonrpc.ID // invalid (null) when the message has none or cannot be read
	code   int
	text   string
}

// checkMCPBody reads a POST body meant for the SDK, refuses one that is not
// JSON (-32700) or not JSON-RPC messages (-32600), and leaves r.Body to be
// read again. A body over limit, or one that is not sent as JSON, is left to
// the SDK's own answers (413, 415).
func checkMCPBody(r *http.Request, limit int64) (*mcpPost, *rpcRefusal) {
	if media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); media != "application/json" {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || int64(len(body)) > limit {
		return nil, nil
	}
	return readMCPBody(body)
}

func readMCPBody(body []byte) (*mcpPost, *rpcRefusal) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, parseError("the body is empty; POST /mcp takes one JSON-RPC message")
	}
	var syntax any
	if err := json.Unmarshal(trimmed, &syntax); err != nil {
		var bad *json.SyntaxError
		if errors.As(err, &bad) {
			return nil, parseError(fmt.Sprintf("the body is not JSON: %v (at byte %d)", err, bad.Offset))
		}
		return nil, parseError("the body is not JSON: " + err.Error())
	}
	if trimmed[0] != '[' {
		msg, err := jsonrpc.DecodeMessage(trimmed)
		if err != nil {
			return nil, &rpcRefusal{http.StatusBadRequest, messageID(trimmed), wire.RPCInvalidRequest,
				"Invalid Request: not a JSON-RPC 2.0 message (" + err.Error() + `); send {"jsonrpc":"2.0","id":…,"method":…,"params":{…}}`}
		}
		req, _ := msg.(*jsonrpc.Request)
		return &mcpPost{request: req}, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(trimmed, &entries); err != nil || len(entries) == 0 {
		return nil, &rpcRefusal{http.StatusBadRequest, jsonrpc.ID{}, wire.RPCInvalidRequest, "Invalid Request: an empty batch"}
	}
	for i, entry := range entries {
		if _, err := jsonrpc.DecodeMessage(entry); err != nil {
			return nil, &rpcRefusal{http.StatusBadRequest, jsonrpc.ID{}, wire.RPCInvalidRequest,
				fmt.Sprintf("Invalid Request: batch entry %d is not a JSON-RPC 2.0 message (%v)", i, err)}
		}
	}
	return &mcpPost{batch: true}, nil
}

func parseError(problem string) *rpcRefusal {
	return &rpcRefusal{http.StatusBadRequest, jsonrpc.ID{}, wire.RPCParseError, "Parse error: " + problem}
}

// messageID is the id of a message that is not valid JSON-RPC otherwise,
// when it has a usable one.
func messageID(message []byte) jsonrpc.ID {
	var m struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(message, &m) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// The beginnings of the SDK's plain-text refusals of JSON-RPC it reads but
// will not take (go-sdk mcp.checkRequest and servePOST). Tests pin them: a
// new SDK wording makes them fail rather than fall back to plain text.
const (
	sdkMethodNotHandled = "JSON RPC not handled"
	sdkInvalidRequest   = "invalid request"
	sdkNoBatches        = "JSON-RPC batching is not supported"
)

// rpcAnswerFor turns the SDK's plain-text refusal of post into the JSON-RPC
// answer it stands for, or nil when it is not about the JSON-RPC message.
//
// An unknown method in a request is answered like any other JSON-RPC error
// response to a request: 200 with the error and the request's id (a 404, as
// protocol 2026-07-28 has it, would tell older clients their session is
// gone; the SDK itself answers that protocol with 404). A notification gets
// no answer: 202, and it is dropped, as JSON-RPC and MCP ignore unknown
// notifications.
func rpcAnswerFor(post *mcpPost, text string) (*rpcRefusal, bool) {
	if post == nil {
		return nil, false
	}
	var id jsonrpc.ID
	if post.request != nil {
		id = post.request.ID
	}
	switch {
	case strings.HasPrefix(text, sdkMethodNotHandled) && post.request != nil && !post.request.IsCall():
		return nil, true // answered 202
	case strings.HasPrefix(text, sdkMethodNotHandled) && post.request != nil:
		return &rpcRefusal{http.StatusOK, id, wire.RPCMethodNotFound, fmt.Sprintf(
			"Method not found: %q is not a method questiond's MCP server offers", post.request.Method)}, false
	case strings.HasPrefix(text, sdkMethodNotHandled):
		return &rpcRefusal{http.StatusBadRequest, id, wire.RPCMethodNotFound, "Method not found: " + strings.TrimPrefix(text, sdkMethodNotHandled+": ") + " (in a batch)"}, false
	case strings.HasPrefix(text, sdkInvalidRequest):
		return &rpcRefusal{http.StatusBadRequest, id, wire.RPCInvalidRequest, "Invalid Request: " + strings.TrimPrefix(text, sdkInvalidRequest+": ")}, false
	case strings.HasPrefix(text, sdkNoBatches):
		return &rpcRefusal{http.StatusBadRequest, id, wire.RPCInvalidRequest, "Invalid Request: " + text}, false
	}
	return nil, false
}

// writeRPCRefusal writes e as a JSON-RPC error response.
func writeRPCRefusal(w http.ResponseWriter, e *rpcRefusal) {
	id, err := json.Marshal(e.id.Raw())
	if err != nil {
		id = []byte("null")
	}
	wire.WriteJSON(w, e.status, wire.RPCResponse{JSONRPC: "2.0", ID: id, Error: &wire.RPCErrorBody{Code: e.code, Message: e.text}})
}
