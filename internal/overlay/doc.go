// Package overlay is questiond's side of an OpenCode server it stands in
// front of (`questiond --upstream`): it forwards requests to that server as
// they are, streaming and with the server's own credentials; reads its
// question list and event streams (whole frame by whole frame, frames.go)
// for questiond to merge with its own; and tells the question service where
// the server's clients show a question (ask.Hosted: the session tree an
// agent names, or the session whose MCP tool call asks, as the server's
// event stream tells its tool calls).
//
// It decides no route and writes no questiond event: package httpapi does,
// over Upstream.
//
// Locks: the session cache's and the tool calls' mutexes are each held
// alone, never across a request to the server.
package overlay
