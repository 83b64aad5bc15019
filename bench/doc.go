// Package bench measures questiond end to end over real loopback HTTP, each
// number beside a baseline measured in the same run: a minimal net/http
// server doing the same exchanges with no validation and no schema work.
//
// It holds only tests and benchmarks. `make bench BENCH='RoundTrip|Fanout'`
// runs the benchmarks; the plain test suite runs one exchange against each
// server so the benchmark code itself stays exercised. The idle-subscriber
// benchmark runs each server as a process of its own (questiond's binary, and
// this test binary re-executed as the baseline) to read its resident memory.
// BENCHMARKS.md at the repository root records the command, the machine and
// the ratios.
package bench
