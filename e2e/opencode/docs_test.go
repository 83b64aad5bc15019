package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docsConfigBlock is the OpenCode config block of docs/bridge.md, as the
// docs show it: the first ```json block after the line that names
// OpenCode's opencode.json.
func docsConfigBlock(t *testing.T) map[string]any {
	t.Helper()
	const doc, heading = "../../docs/bridge.md", "**OpenCode** (`opencode.json`)"
	data, err := os.ReadFile(filepath.FromSlash(doc))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), heading)
	if !ok {
		t.Fatalf("%s has no %q: the test reads OpenCode's config block after it", doc, heading)
	}
	_, block, ok := strings.Cut(after, "```json\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatalf("%s has no ```json block after %q", doc, heading)
	}
	var config map[string]any
	if err := json.Unmarshal([]byte(block), &config); err != nil {
		t.Fatalf("%s: OpenCode's config block is not JSON: %v\n%s", doc, err, block)
	}
	return config
}

// docsServer is the one MCP server of the docs' OpenCode config block: its
// key, its command (["questiond", "bridge", …, "--", upstream…]) and its
// environment. It fails the test when the block is not so.
func docsServer(t *testing.T) (key string, command []string, env map[string]string) {
	t.Helper()
	var block struct {
		MCP map[string]struct {
			Type        string            `json:"type"`
			Command     []string          `json:"command"`
			Environment map[string]string `json:"environment"`
		} `json:"mcp"`
	}
	raw, _ := json.Marshal(docsConfigBlock(t))
	if err := json.Unmarshal(raw, &block); err != nil || len(block.MCP) != 1 {
		t.Fatalf("the docs' OpenCode block has not one server under \"mcp\" (%v): %s", err, raw)
	}
	for k, server := range block.MCP {
		key, command, env = k, server.Command, server.Environment
		dash := slices.Index(command, "--")
		name := slices.Index(command, "--name")
		if server.Type != "local" || len(command) < 2 || command[0] != "questiond" || command[1] != "bridge" ||
			dash < 0 || dash == len(command)-1 || name < 0 || name > dash || command[name+1] != key {
			t.Fatalf("the docs' OpenCode block does not run `questiond bridge --name %s -- SERVER…` as a local server: %s", key, raw)
		}
		if _, ok := env["QUESTIOND_TOKEN"]; !ok {
			t.Fatalf("the docs' OpenCode block gives the bridge no QUESTIOND_TOKEN: %s", raw)
		}
	}
	return key, command, env
}

// bridged is the docs' OpenCode "mcp" section made real: questiond is
// bin, the server after "--" is upstream, and the environment carries the
// real token (where the docs show a placeholder) and questiond's address.
func bridged(t *testing.T, bin string, upstream []string, server, token string) (key string, section map[string]any) {
	t.Helper()
	key, command, docEnv := docsServer(t)
	dash := slices.Index(command, "--")
	command = append(append([]string{bin}, command[1:dash+1]...), upstream...)
	env := map[string]string{"QUESTIOND_SERVER": server}
	for k := range docEnv {
		env[k] = docEnv[k]
	}
	env["QUESTIOND_TOKEN"] = token
	return key, map[string]any{key: map[string]any{"type": "local", "command": command, "environment": env}}
}

// direct is the same server configured without the bridge: only what the
// docs' command runs after "--", under the same key.
func direct(t *testing.T, upstream []string) (key string, section map[string]any) {
	t.Helper()
	key, _, _ = docsServer(t)
	return key, map[string]any{key: map[string]any{"type": "local", "command": upstream}}
}
