#!/usr/bin/env bash
# OpenCode SDK compatibility test: drives questiond with the real
# @opencode-ai/sdk (v2 entry point), pinned in package-lock.json. The test
# starts the daemon twice, without credentials and with a password and an
# agent token, and runs every check against both (hence the 2 below: the
# daemons it starts). QUESTIOND_TEST_STORE=postgres runs it on PostgreSQL;
# QUESTIOND_TEST_UPSTREAM=opencode with each daemon started with --upstream
# in front of a real `opencode serve` of its own (see ../opencode.mjs).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../node-suite.sh" "$here" @opencode-ai/sdk compat.test.mjs 2
