#!/usr/bin/env bash
# MCP SDK interoperability test: drives questiond's /mcp endpoint with the
# official TypeScript MCP SDK client (@modelcontextprotocol/sdk, pinned in
# package-lock.json), while the operator answers with plain HTTP. It starts
# one daemon (the 1 below). QUESTIOND_TEST_STORE=postgres runs it on
# PostgreSQL.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../node-suite.sh" "$here" @modelcontextprotocol/sdk interop.test.mjs 1
