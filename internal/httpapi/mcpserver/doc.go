// Package mcpserver is questiond's MCP server on /mcp (Streamable HTTP): one
// MCP server per session with the one question tool its questiond
// session's capability allows, whose calls ask through package ask for the
// agent httpapi's guard admitted, passed in as data (Endpoint.Serve), and
// wait for the answer. Refusals are questiond's JSON errors (package wire)
// or JSON-RPC errors, never the SDK's plain text; a question that cannot be
// asked becomes a tool error through toolError, the MCP protocol's one
// mapper of domain errors.
//
// Locks: Endpoint.mu guards the live sessions and their room, streamMu the
// GET /mcp streams' slots. They are never held together, and neither is
// held while a session closes (Close collects the servers under mu and
// closes their sessions after releasing it) or while the service is called.
package mcpserver
