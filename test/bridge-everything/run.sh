#!/usr/bin/env bash
# questiond bridge in front of the official MCP reference server
# (@modelcontextprotocol/server-everything), the official TypeScript MCP SDK
# client as the host, both pinned in package-lock.json: the transcript through
# the bridge must match the one without it, and the server's elicitation is
# answered by an operator over questiond's HTTP API. It starts one daemon
# (the 1 below). QUESTIOND_TEST_STORE=postgres runs it on PostgreSQL.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../node-suite.sh" "$here" @modelcontextprotocol/server-everything bridge.test.mjs 1
