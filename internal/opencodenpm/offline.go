package opencodenpm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// OfflineEnv is the environment that runs OpenCode with nothing from
// outside and nothing of the user's: this process's environment less its
// OPENCODE_*, XDG_*, HOME and npm registry variables, then a home and XDG
// directories of its own under root (made here), no update check, no
// model list or LSP downloads, no default plugins, no Claude Code or
// external skills, no sharing or compaction, and npm pointed at a closed
// port (OpenCode installs its plugin package at start-up; that install
// then fails quietly). The benchmark, the TUI's
// tests and e2e/opencode run it so.
func OfflineEnv(root string) ([]string, error) {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc([]string{"OPENCODE_", "XDG_", "HOME=", "npm_config_", "NPM_CONFIG_"},
			func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	for _, dir := range []string{"home", "config", "data", "cache", "state"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			return nil, err
		}
	}
	return append(env,
		"HOME="+filepath.Join(root, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_DATA_HOME="+filepath.Join(root, "data"),
		"XDG_CACHE_HOME="+filepath.Join(root, "cache"), "XDG_STATE_HOME="+filepath.Join(root, "state"),
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1", "OPENCODE_ENABLE_QUESTION_TOOL=1", "OPENCODE_DISABLE_AUTOCOMPACT=1",
		"OPENCODE_DISABLE_PRUNE=1", "DO_NOT_TRACK=1",
		"npm_config_registry=http://127.0.0.1:9/", "NPM_CONFIG_REGISTRY=http://127.0.0.1:9/"), nil
}
