// Package mcpserver is questiond's MCP server on /mcp (Streamable HTTP): one
// MCP server per session with the one question tool its questiond
// session's capability allows, whose calls ask through package ask for the
// agent httpapi's guard admitted, passed in as data (Endpoint.Serve), and
// wait for the answer. Refusals are questiond's JSON errors (package wire)
// or JSON-RPC errors, never the SDK's plain text; a question that cannot be
// asked becomes a tool error through toolError, the MCP protocol's one
// mapper of domain errors.
//
// Two protocols, two SDK handlers. go-sdk serves MCP 2026-07-28 (SEP-2575:
// no initialize, no session, every request carrying its version and its
// client's capabilities in _meta) only from a handler with
// StreamableHTTPOptions.Stateless, and the older versions (2024-11-05 to
// 2025-11-25, batches included) only from a stateful one, so Serve routes
// each request (statelessRequest): one naming an Mcp-Session-Id always goes
// to the stateful handler, as before; one naming none goes to the stateless
// handler when its MCP-Protocol-Version header is 2026-07-28 or later (as
// the SDK compares versions: as strings; a later version questiond does not
// speak gets UnsupportedProtocolVersionError listing the ones it does), or,
// without that header, when its one message carries
// _meta["io.modelcontextprotocol/protocolVersion"] (the stateless handler
// then says the header is missing). Everything else is stateful, exactly as
// before: a server/discover probe is 2026-07-28 by definition (the SDK
// sends it with that header), and an initialize of an older version never
// carries it. Before routing, the body passes the same JSON-RPC checks;
// before Serve, the same middleware (host guard, agents' tokens, connection
// caps, body limits) as every route.
//
// A stateless request gets a server of its own, built for it and gone with
// its answer: its question is filed in the session it names (?session=,
// X-Questiond-Session) or else its agent's inbox; it holds no MCP session,
// so the MCP session limits and the idle timeout do not apply to it; and
// since the server may send it no request, a tool call waiting without a
// progress token is kept alive with SSE comments (sdkErrorWriter.comment)
// instead of pings. It is refused the methods of capabilities questiond does
// not declare (prompts, resources, completion), which the SDK would answer
// with empty lists: 2026-07-28 asks for -32601 there (offeredOnly). Its
// server also serves the MCP tasks extension (package mcptasks): a tool
// call whose request declares it returns the question's task at once
// (askTool hands the question to mcptasks.Started instead of waiting), and
// tasks/get, tasks/update and tasks/cancel read and withdraw it in the
// store, for the agent that asked only (tasks.go).
//
// Locks: Endpoint.mu guards the live sessions and their room, streamMu the
// GET /mcp streams' slots, and each response's sdkErrorWriter.mu its writes;
// a new session's answer takes Endpoint.mu under its writer's mu (onHeader),
// never the other way round. Endpoint.mu and streamMu are never held together, and neither is
// held while a session closes (Close collects the servers under mu and
// closes their sessions after releasing it) or while the service is called.
package mcpserver
