#!/usr/bin/env bash
# OpenCode's own routes through questiond: the real @opencode-ai/sdk (v2
# entry point, pinned in package-lock.json, the version test/opencode-sdk
# pins) drives a real `opencode serve` (offline, a scripted fake model;
# test/offlineopencode) both directly and through questiond --upstream in
# front of it, and the answers must be the same. The test starts one
# questiond for each of its two modes, without credentials and with
# OpenCode's password (hence the 2 below).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
QUESTIOND_TEST_UPSTREAM=opencode exec "$here/../node-suite.sh" "$here" @opencode-ai/sdk upstream.test.mjs 2
