#!/usr/bin/env bash
# bench/compare.sh — `make bench-compare BEFORE=<rev> AFTER=<rev>`: round
# trips per second of questiond built from two revisions, each run as a
# process with agent tokens and an operator password, the two taking turns
# (bench/binaries_linux_test.go, BenchmarkBinaries). Prints a Markdown table
# for BENCHMARKS.md.
#
# Each revision is exported with git archive into a scratch directory and
# built there (as `make build` does); the working tree is not touched.
# Settings come from the environment: QUESTIOND_BENCH_RUNS (5),
# QUESTIOND_BENCH_DURATION (5s), QUESTIOND_BENCH_AGENTS (1,64,512),
# QUESTIOND_BENCH_STORES (bolt,memory), QUESTIOND_BENCH_FLAGS (extra flags
# for both binaries, e.g. '--max-connections-per-address 4096').
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO=${GO:-go}
before=${1:?usage: bench/compare.sh BEFORE-REV AFTER-REV}
after=${2:?usage: bench/compare.sh BEFORE-REV AFTER-REV}

tmp=$(mktemp -d -t bench-compare.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
build() { # name rev
  local sha
  sha=$(git rev-parse --short "$2^{commit}")
  mkdir -p "$tmp/src-$1"
  git archive "$sha" | tar -x -C "$tmp/src-$1"
  (cd "$tmp/src-$1" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-X main.version=$sha" -o "$tmp/$1" ./cmd/questiond)
  rm -rf "$tmp/src-$1"
}
build before "$before"
build after "$after"
"$GO" test -c -o "$tmp/bench.test" ./bench
QUESTIOND_BENCH_BINARIES="before=$tmp/before,after=$tmp/after" QUESTIOND_BENCH_OUT="$tmp/table.md" \
  "$tmp/bench.test" -test.run '^$' -test.bench '^BenchmarkBinaries$' -test.benchtime 1x -test.timeout 2h >&2
cat "$tmp/table.md"
