#!/usr/bin/env bash
# Runs one Node.js suite of test/ against a freshly built questiond:
#
#   test/node-suite.sh <suite directory> <npm package under test> <test file> <daemons>
#
# It installs the suite's pinned packages (npm ci), builds the daemon, and
# runs the test file with node --test, passing the daemon's path in
# QUESTIOND_BIN and a pidfile in QUESTIOND_PIDFILE: the test writes the
# daemon's pid there, so the daemon is stopped even when the test process
# dies without cleaning up.
#
# QUESTIOND_TEST_STORE picks the store the test's daemons run on (see
# test/daemon-store.mjs). With QUESTIOND_TEST_STORE=postgres the test runs
# under test/withpostgres: a throwaway PostgreSQL server with <daemons> (how
# many daemons the test file starts) empty databases, one for each daemon,
# stopped when the test ends.
#
# QUESTIOND_TEST_UPSTREAM=opencode puts the test's daemons in front of the
# real OpenCode (questiond --upstream; see test/opencode.mjs): the script
# then builds test/offlineopencode, which runs `opencode serve` offline with
# a scripted fake model, installs the pinned OpenCode with it (npm, once,
# into the user's cache) and passes its path in QUESTIOND_TEST_OPENCODE.
#
# Part of `make test`, so a missing tool is a failure, never a skip: a suite
# that silently skips its check would pass on a machine where nothing was
# checked. Works from any directory and leaves no process behind.
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: $0 <suite directory> <npm package> <test file> <daemons>" >&2; exit 2; }
here="$(cd "$1" && pwd)"
package="$2"
test_file="$3"
daemons="$4"
store="${QUESTIOND_TEST_STORE:-}"
upstream="${QUESTIOND_TEST_UPSTREAM:-}"
suite="test/$(basename "$here")"
root="$(cd "$here/../.." && pwd)"
go_tool="${GO:-go}"

fail() {
	echo "$suite: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 ||
		fail "'$1' is not on PATH; $2 (CI=${CI:-unset}; $suite is part of 'make test' and is never skipped)"
}

need node "install Node.js 20 or newer"
need npm "install npm (it comes with Node.js)"
need "$go_tool" "install Go (see go.mod for the version)"

[[ -z "$upstream" || "$upstream" == opencode ]] ||
	fail "QUESTIOND_TEST_UPSTREAM must be opencode or unset, got '$upstream'"

node_major="$(node -p 'process.versions.node.split(".")[0]')"
[[ "$node_major" -ge 20 ]] || fail "Node.js 20 or newer is needed, found $(node --version)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/questiond-$(basename "$here").XXXXXX")"
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

echo "$suite: npm ci"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)

echo "$suite: go build ./cmd/questiond"
(cd "$root" && "$go_tool" build -o "$tmp/questiond" ./cmd/questiond)

if [[ "$upstream" == opencode ]]; then
	echo "$suite: go build ./test/offlineopencode"
	(cd "$root" && "$go_tool" build -o "$tmp/offlineopencode" ./test/offlineopencode)
	# Before the tests, whose start-up waits are too short for an install.
	echo "$suite: OpenCode $("$tmp/offlineopencode" -install)"
	export QUESTIOND_TEST_OPENCODE="$tmp/offlineopencode"
fi

# On postgres, node runs under withpostgres, which passes this script's
# signals on to it and stops the server once it has exited.
wrapper=()
if [[ "$store" == postgres ]]; then
	echo "$suite: go build ./test/withpostgres"
	(cd "$root" && "$go_tool" build -o "$tmp/withpostgres" ./test/withpostgres)
	wrapper=("$tmp/withpostgres" -databases "$daemons")
fi

version="$(cd "$here" && node -p "require('./node_modules/$package/package.json').version")"
echo "$suite: node --test (node $(node --version), $package $version, store: ${store:-default}${upstream:+, upstream: $upstream})"
# In the background so that a signal to this script reaches the trap at once.
(
	cd "$here"
	QUESTIOND_BIN="$tmp/questiond" QUESTIOND_PIDFILE="$pidfile" \
		exec "${wrapper[@]}" node --test --test-reporter=spec "$test_file"
) </dev/null &
node_pid=$!
wait "$node_pid"
