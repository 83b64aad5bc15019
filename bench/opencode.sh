#!/usr/bin/env bash
# bench/opencode.sh — `make bench-opencode`: questiond (memory and bolt stores)
# beside OpenCode's own server (opencode-ai from npm, pinned) and a bare
# net/http server sending questiond's bytes, under one load generator
# (bench/cmd/sidebyside). Prints a Markdown table for BENCHMARKS.md.
#
# Arguments go to sidebyside: bench/opencode.sh -duration 1s -rounds 1
# Needs: go, and npm the first time (opencode-ai is installed into the user
# cache directory, shared with `make tui`). All traffic stays on 127.0.0.1
# but npm's install; OpenCode runs offline with a fake model.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}

tmp=$(mktemp -d -t bench-opencode.XXXXXX)
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-X main.version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}" \
  -o "$tmp/questiond" ./cmd/questiond
"$GO" build -o "$tmp/sidebyside" ./bench/cmd/sidebyside
# sidebyside fails (exit 1, saying why) when opencode-ai cannot be installed
# or any server does not start: a table without OpenCode is never printed
# unless -servers leaves it out.
if "$tmp/sidebyside" -questiond "$tmp/questiond" -work "$tmp" "$@"; then
  rm -rf "$tmp"
else
  status=$?
  echo "bench-opencode failed (exit $status); the servers' logs are kept in $tmp" >&2
  exit "$status"
fi
