// Package opencode tests `questiond bridge` under the real OpenCode
// (opencode-ai, pinned, `opencode serve` offline with a scripted fake
// model): an MCP server's elicitation, which OpenCode cannot answer, is
// answered by an operator through questiond, and OpenCode's own session
// history holds the tool's result.
package opencode
