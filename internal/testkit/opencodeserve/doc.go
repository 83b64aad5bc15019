// Package opencodeserve is the OpenCode host the suites of `questiond
// bridge` share: the real OpenCode (`opencode serve`, offline, on
// loopback) whose only model is the scripted fake (package fakellm) that
// calls one MCP tool, or OpenCode's own question tool when asked to
// (AskPrompt), its session history read over OpenCode's own HTTP
// API, restarted on its address when a test says (Restart), and the
// small MCP server those suites put behind the bridge, whose
// tool elicits a form (a titled enum, a boolean, an integer with bounds
// and an optional string with a default).
//
// It is for tests only.
package opencodeserve
