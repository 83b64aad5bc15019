#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a while: `make fuzz`.
#
#   test/fuzz.sh <seconds in all> [<time per target>]
#
# Without a time per target, the seconds are shared equally by the targets
# (at least 5 s each). A target's own failure — a crasher, written to its
# testdata/fuzz directory — fails the run.
#
# One failure is not the target's: Go's fuzz coordinator up to go1.26
# (golang/go#75804) can report "context deadline exceeded" when -fuzztime
# runs out while a worker is busy, with no failing input; on this 2-core
# machine under load about one target in ten ends so. A run that ends
# exactly that way (that line, no "Failing input written") is run again,
# said so, with a count budget instead (-fuzztime Nx, N the executions the
# timed run reached): a count has no deadline to race, and N keeps the rerun
# about as long as the first. Count budgets are not used from the start
# because their run time follows each target's speed and the machine's load,
# which the total budget cannot bound.
set -euo pipefail

[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 <seconds in all> [<time per target>]" >&2; exit 2; }
budget="$1"
each="${2:-}"
go="${GO:-go}"
cd "$(dirname "$0")/.."

targets=()
for pkg in $("$go" list ./...); do
  for target in $("$go" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    targets+=("$pkg:$target")
  done
done
count=${#targets[@]}
[[ $count -gt 0 ]] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }
if [[ -z "$each" ]]; then
  seconds=$(( budget / count ))
  [[ $seconds -ge 5 ]] || seconds=5
  each="${seconds}s"
fi
echo "fuzz: $count targets, $each each"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# fuzz_once runs one target for the given -fuzztime, echoing its output;
# the output is kept in $log.
fuzz_once() {
  local pkg="$1" target="$2" budget="$3" status=0
  "$go" test -run '^$' -fuzz "^$target\$" -fuzztime "$budget" "$pkg" 2>&1 | tee "$log" || status=$?
  return "$status"
}

# deadline_race says whether the run in $log ended the way golang/go#75804
# does: the target failed with "context deadline exceeded" and no input.
deadline_race() {
  grep -q -- '^--- FAIL: ' "$log" &&
    grep -qx '    context deadline exceeded' "$log" &&
    ! grep -q 'Failing input written' "$log"
}

# executions prints how many inputs the run in $log had tried, 0 if unknown.
executions() {
  sed -n 's/^fuzz: elapsed: .*, execs: \([0-9][0-9]*\) .*/\1/p' "$log" | tail -n 1 | grep . || echo 0
}

for pair in "${targets[@]}"; do
  pkg="${pair%%:*}"
  target="${pair##*:}"
  echo "fuzz $pkg $target ($each)"
  if fuzz_once "$pkg" "$target" "$each"; then
    continue
  fi
  if deadline_race; then
    count=$(executions)
    [[ $count -gt 0 ]] || count=10000
    echo "fuzz: $target stopped on Go's fuzztime deadline race (golang/go#75804, no failing input); running it again for ${count} executions"
    fuzz_once "$pkg" "$target" "${count}x" && continue
  fi
  echo "fuzz: $target failed" >&2
  exit 1
done
