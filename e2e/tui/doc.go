// Package tui tests questiond as the operator console of the real OpenCode TUI (opencode attach), run in tmux and driven by keys, and the real TUI attached to questiond --upstream in front of the real `opencode serve` (overlay_test.go), also across restarts of either server (overlay_restart_test.go).
package tui
