// Package session remembers what each agent session may ask: its question
// capability, one value per session — user (ask the operator), parent (ask
// through its parent session) or none (ask nobody) — so that "may ask the
// user" and "may ask the parent" can never both be true.
//
// A Registry answers for every session id: sessions nobody configured get the
// registry's default. Records can be kept in a Journal (a table in the
// question database) so that a session set to none stays none across
// restarts: a capability that silently reverted to the default would fail
// open. RouteQuestion applies the rule: where a session's question goes, or
// why it goes nowhere, whichever route (HTTP, MCP) it was asked by.
//
// It also remembers whose each session is (owner.go): the agent that first
// configured it, asked in it or named it as a parent, so that no agent
// changes, asks in or asks through another's session.
package session
