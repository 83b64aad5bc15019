#!/usr/bin/env bash
# MCP SDK interoperability test: builds questiond and drives its /mcp endpoint
# with the official TypeScript MCP SDK client (@modelcontextprotocol/sdk,
# pinned in package-lock.json), while the operator answers with plain HTTP.
#
# Part of `make test`, so a missing tool is a failure, never a skip: a suite
# that silently skips its interoperability check would pass on a machine where
# nothing was checked. Works from any directory and leaves no process behind.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
go_tool="${GO:-go}"

fail() {
	echo "test/mcp-sdk: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 ||
		fail "'$1' is not on PATH; $2 (CI=${CI:-unset}; the MCP SDK interoperability test is part of 'make test' and is never skipped)"
}

need node "install Node.js 20 or newer"
need npm "install npm (it comes with Node.js)"
need "$go_tool" "install Go (see go.mod for the version)"

node_major="$(node -p 'process.versions.node.split(".")[0]')"
[[ "$node_major" -ge 20 ]] || fail "Node.js 20 or newer is needed, found $(node --version)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/questiond-mcp-sdk.XXXXXX")"
node_pid=""

# The test writes the daemon's pid here, so the daemon is stopped even when
# the test process dies without running its own clean-up.
pidfile="$tmp/questiond.pid"

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [[ -n "$node_pid" ]] && kill -0 "$node_pid" 2>/dev/null; then
		kill -TERM "$node_pid" 2>/dev/null || true
		wait "$node_pid" 2>/dev/null || true
	fi
	if [[ -s "$pidfile" ]]; then
		local daemon_pid
		daemon_pid="$(<"$pidfile")"
		if kill -0 "$daemon_pid" 2>/dev/null; then
			kill -KILL "$daemon_pid" 2>/dev/null || true
		fi
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "test/mcp-sdk: npm ci"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)

echo "test/mcp-sdk: go build ./cmd/questiond"
(cd "$root" && "$go_tool" build -o "$tmp/questiond" ./cmd/questiond)

sdk_version="$(cd "$here" && node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version')"
echo "test/mcp-sdk: node --test (node $(node --version), @modelcontextprotocol/sdk $sdk_version)"
# In the background so that a signal to this script reaches the trap at once.
(
	cd "$here"
	QUESTIOND_BIN="$tmp/questiond" QUESTIOND_PIDFILE="$pidfile" \
		exec node --test --test-reporter=spec interop.test.mjs
) </dev/null &
node_pid=$!
wait "$node_pid"
