// Package ask is the question's life below every protocol: asking (checked
// against the limits, routed by the session's question capability, made
// safe to retry by an Idempotency-Key), waiting (with a grace for a caller
// whose connection dropped), withdrawing, replying, rejecting, and the doors
// a shutdown closes and waits at.
//
// HTTP, JSON-RPC, the MCP question tools and the TUI console are adapters
// over one Service: they parse their wire into a Request or an id, call a
// method, and map the domain errors it returns (errors.go) once each. The
// package imports no protocol: not net/http, not httpapi, not sse.
//
// Dependencies point one way: ask uses pending (where questions are kept),
// elicit (schemas and answers), session (who may ask where) and ident (ids).
package ask
