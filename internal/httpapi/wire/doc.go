// Package wire is what questiond's HTTP protocols share on the wire: one
// JSON writer and one mapper from errors to HTTP answers (WriteError, with
// HTTPError turning package ask's domain errors into HTTP ones first, and
// OpenCode's error bodies), OpenCode's question shapes and events, the
// JSON-RPC envelope, a request's directory scope, and how a client's text
// is shown in one bounded line. The routes (httpapi), the middleware, the
// console and the MCP server import it; it imports none of them.
//
// The JSON-RPC and MCP mappers (httpapi's writeRPCError, mcpserver's
// toolError) start from HTTPError too, so each domain error is mapped once
// per protocol.
package wire
