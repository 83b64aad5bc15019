package wire

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC, as the agents' POST /elicit and the MCP endpoint answer in it.

// JSON-RPC error codes, JSON-RPC 2.0's own.
const (
	RPCParseError     = jsonrpc.CodeParseError
	RPCInvalidRequest = jsonrpc.CodeInvalidRequest
	RPCMethodNotFound = jsonrpc.CodeMethodNotFound
	RPCInvalidParams  = jsonrpc.CodeInvalidParams
	RPCInternalError  = jsonrpc.CodeInternalError
)

// RPCResponse is a JSON-RPC 2.0 response: a result or an error.
type RPCResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"` // nil for an error
	Error   *RPCErrorBody   `json:"error,omitempty"`
}

// RPCErrorBody is a JSON-RPC error object.
type RPCErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
