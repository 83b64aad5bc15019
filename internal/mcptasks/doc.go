// Package mcptasks is the MCP tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663, on MCP 2026-07-28) for questiond's question tools: a tool call
// from a client that declares the extension returns a task at once instead
// of waiting, and tasks/get, tasks/update and tasks/cancel read and end it.
// go-sdk v1.8.0 has no tasks support, so this package is our own, small:
// the wire shapes, the mapping of a question's state to a task's, and the
// three methods on a go-sdk server (mcp.AddReceivingCustomMethod).
//
// A task is its question: the task id is the question's id, and every state
// a task reports is read from the question store at each request (pending →
// working; answered, dismissed or timed out → completed with the tool's
// result; withdrawn → cancelled; ended by questiond itself → failed). Nothing
// lives in the process that created it, so a task survives dropped
// connections and restarts of a durable store, and any replica sharing the
// store answers for it. Only the agent that created a task may read or
// cancel it: another agent's task id is "not found", exactly like an id
// that never existed.
package mcptasks
