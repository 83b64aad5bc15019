package main

import (
	"io"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi"
)

// The operators' and the agents' stream budgets and the per-agent MCP caps
// have their defaults from httpapi, reach the server from their flags and
// environment twins, and a value that would lift them is refused by name.
func TestStreamAndMCPBudgetFlags(t *testing.T) {
	t.Parallel()
	limitsOf := func(args []string, env map[string]string) httpapi.Limits {
		t.Helper()
		cfg, err := parseConfig(append([]string{"--store", "memory"}, args...), envOf(env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		d, err := daemonConfig(cfg, envOf(env), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		return d.API.Limits
	}
	got := limitsOf(nil, nil)
	if got.MaxStreams != httpapi.DefaultMaxStreams || got.MaxMCPStreams != httpapi.DefaultMaxMCPStreams ||
		got.MaxMCPStreamsPerAgent != httpapi.DefaultMaxMCPStreamsPerAgent || got.MaxMCPSessionsPerAgent != httpapi.DefaultMaxMCPSessionsPerAgent {
		t.Errorf("defaults: %+v", got)
	}
	got = limitsOf([]string{"--max-streams", "7", "--max-mcp-streams", "8", "--max-mcp-sessions-per-agent", "9"},
		map[string]string{"QUESTIOND_MAX_MCP_STREAMS_PER_AGENT": "3"})
	if got.MaxStreams != 7 || got.MaxMCPStreams != 8 || got.MaxMCPSessionsPerAgent != 9 || got.MaxMCPStreamsPerAgent != 3 {
		t.Errorf("set: %+v", got)
	}
	for _, name := range []string{"--max-mcp-streams", "--max-mcp-streams-per-agent", "--max-mcp-sessions-per-agent"} {
		_, err := parseConfig([]string{name, "0"}, envOf(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("%s 0: %v", name, err)
		}
	}
}
