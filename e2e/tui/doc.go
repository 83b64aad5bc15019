// Package tui tests questiond as the operator console of the real OpenCode TUI (opencode attach), run in tmux and driven by keys.
package tui
