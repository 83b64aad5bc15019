//go:build linux

package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/bench/workload"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// Settings of BenchmarkBinaries, from the environment (bench/compare.sh,
// `make bench-compare`, sets them).
const (
	binariesEnv = "QUESTIOND_BENCH_BINARIES" // name=path,name=path: the binaries compared, in run order
	runsEnv     = "QUESTIOND_BENCH_RUNS"     // runs of each binary per case (default 5)
	durationEnv = "QUESTIOND_BENCH_DURATION" // timed part of one run (default 5s)
	agentsEnv   = "QUESTIOND_BENCH_AGENTS"   // agent counts, comma-separated (default 1,64,512)
	storesEnv   = "QUESTIOND_BENCH_STORES"   // stores, comma-separated (default bolt,memory)
	flagsEnv    = "QUESTIOND_BENCH_FLAGS"    // extra flags for every binary, space-separated
	outEnv      = "QUESTIOND_BENCH_OUT"      // file the Markdown table is written to (default: the log)
)

// binariesRateLimit replaces the default --rate-limit (6 000 requests a
// minute per agent token and for the operator) in BenchmarkBinaries: the
// load is far beyond it by design, and a limit never reached keeps the
// limiter's own work (its key, its counters) in what is measured, which
// --rate-limit 0 would skip.
const binariesRateLimit = "1000000000"

// connectionCapLog is in the line questiond logs (at most once a minute)
// when one of its connection caps (--max-connections, -per-address,
// -per-agent) closed or refused connections; binaries before those caps
// never log it.
const connectionCapLog = "a connection cap was reached"

// binariesTokens is how many agent tokens every binary is configured with,
// one per agent of the largest run: each agent is a client of its own, as
// agents are separate programs in a deployment.
const binariesTokens = 512

// BenchmarkBinaries compares questiond binaries, each run as a process,
// by whole round trips per second (BenchmarkRoundTrip's exchange: the agent
// asks, the operator sees question.asked on /event and replies, the agent's
// long-poll returns accept) with credentials as a deployment has them: an
// operator password and one bearer token per agent, each agent with its
// own connections. For each store and agent count the binaries take turns,
// one fresh process per run (a new data directory for bolt), so whatever
// else loads the machine falls on all of them alike; it writes a Markdown
// table of the medians, the ratios to the first binary and every run.
//
// It runs only when QUESTIOND_BENCH_BINARIES names the binaries; see
// bench/compare.sh (`make bench-compare BEFORE=<rev> AFTER=<rev>`).
func BenchmarkBinaries(b *testing.B) {
	spec := os.Getenv(binariesEnv)
	if spec == "" {
		b.Skip(binariesEnv + " is not set (name=binary,name=binary); see bench/compare.sh")
	}
	cfg := binariesConfig(b, spec)
	var all []binariesRun
	for _, store := range cfg.stores {
		for _, agents := range cfg.agents {
			for run := range cfg.runs {
				for _, bin := range cfg.binaries {
					r := runBinary(b, cfg, bin, store, agents)
					r.run = run + 1
					fmt.Fprintf(os.Stderr, "%s %s agents=%d run %d: %s\n", bin.name, store, agents, run+1, r.summary())
					all = append(all, r)
				}
			}
		}
	}
	table := binariesTable(cfg, all)
	if cfg.out == "" {
		b.Log("\n" + table)
		return
	}
	if err := os.WriteFile(cfg.out, []byte(table), 0o644); err != nil {
		b.Fatal(err)
	}
}

type binary struct{ name, path string }

type binariesSettings struct {
	binaries []binary
	runs     int
	duration time.Duration
	agents   []int
	stores   []string
	flags    []string
	out      string
	tokens   []string // name=token of every agent, in agent order
	password string
}

func binariesConfig(b *testing.B, spec string) *binariesSettings {
	cfg := &binariesSettings{runs: 5, duration: 5 * time.Second, agents: agentCounts, stores: []string{"bolt", "memory"}, out: os.Getenv(outEnv)}
	for _, nb := range strings.Split(spec, ",") {
		name, path, ok := strings.Cut(nb, "=")
		if !ok {
			b.Fatalf("%s: %q is not name=path", binariesEnv, nb)
		}
		cfg.binaries = append(cfg.binaries, binary{name, path})
	}
	if v := os.Getenv(runsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s: %q is not a positive count", runsEnv, v)
		}
		cfg.runs = n
	}
	if v := os.Getenv(durationEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("%s: %q is not a positive duration", durationEnv, v)
		}
		cfg.duration = d
	}
	if v := os.Getenv(agentsEnv); v != "" {
		cfg.agents = nil
		for _, a := range strings.Split(v, ",") {
			n, err := strconv.Atoi(a)
			if err != nil || n < 1 || n > binariesTokens {
				b.Fatalf("%s: %q is not an agent count from 1 to %d", agentsEnv, a, binariesTokens)
			}
			cfg.agents = append(cfg.agents, n)
		}
	}
	if v := os.Getenv(storesEnv); v != "" {
		cfg.stores = strings.Split(v, ",")
	}
	cfg.flags = strings.Fields(os.Getenv(flagsEnv))
	for i := range binariesTokens {
		cfg.tokens = append(cfg.tokens, fmt.Sprintf("agent%03d=%s", i+1, randomHex(b)))
	}
	cfg.password = randomHex(b)
	return cfg
}

func randomHex(b *testing.B) string {
	buf := make([]byte, 16)
	if _, err := rand.Read(buf); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(buf)
}

// binariesRun is what one run of one binary measured.
type binariesRun struct {
	binary, store string
	agents, run   int
	load          string // the 1-minute load average when it started
	roundTrips    int
	elapsed       time.Duration
	latencies     []time.Duration
	cpu           time.Duration // the server's CPU time (user and system) over the timed part
	rssKiB        int64
	capped        string // the server's log line saying a connection cap closed or refused connections, if any
	err           error  // why the run ended early, if it did
}

func (r binariesRun) perSecond() float64 { return float64(r.roundTrips) / r.elapsed.Seconds() }

// cpuPerRoundTrip is the server's CPU time per round trip, in µs: what a
// round trip costs it, whatever share of the machine it got meanwhile.
func (r binariesRun) cpuPerRoundTrip() float64 {
	if r.roundTrips == 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / float64(r.roundTrips)
}

func (r binariesRun) quantile(q float64) time.Duration { return workload.Quantile(r.latencies, q) }

func (r binariesRun) summary() string {
	if r.err != nil {
		return fmt.Sprintf("FAILED after %d round trips: %v (load %s)", r.roundTrips, r.err, r.load)
	}
	return fmt.Sprintf("%.0f round trips/s, server CPU %.0f µs each, p50 %v, p99 %v, RSS %d MiB (load %s)",
		r.perSecond(), r.cpuPerRoundTrip(), r.quantile(0.5).Round(10*time.Microsecond), r.quantile(0.99).Round(10*time.Microsecond), r.rssKiB/1024, r.load)
}

// runBinary starts bin with store, warms it up with two round trips per
// agent (which also opens the connections), measures round trips for
// cfg.duration and stops it.
func runBinary(b *testing.B, cfg *binariesSettings, bin binary, store string, agents int) (r binariesRun) {
	r = binariesRun{binary: bin.name, store: store, agents: agents, load: loadAverage()}
	dataDir := b.TempDir()
	args := []string{"--store", store, "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
		"--log-format", "json", "--rate-limit", binariesRateLimit}
	cmd := exec.Command(bin.path, append(args, cfg.flags...)...)
	cmd.Env = append(environWithout("QUESTIOND_"),
		"QUESTIOND_AGENT_TOKENS="+strings.Join(cfg.tokens, ","),
		"QUESTIOND_OPERATOR_PASSWORD="+cfg.password)
	var capped atomic.Value
	p := startProcess(b, bin.name, cmd, nil, func(line string) string {
		if strings.Contains(line, connectionCapLog) {
			capped.CompareAndSwap(nil, line)
		}
		return launch.ListeningAddr(line)
	})
	defer func() {
		if err := p.stop(); err != nil && r.err == nil {
			r.err = err
		}
		if line, ok := capped.Load().(string); ok {
			r.capped = line
			fmt.Fprintf(os.Stderr, "%s: %s\n", bin.name, line)
		}
		if r.err != nil {
			fmt.Fprintf(os.Stderr, "%s's output ended with:\n%s\n", bin.name, p.Output())
		}
	}()
	base := "http://" + p.addr
	opClient := newClient(base, agents+16)
	opClient.authorization = "Basic " + base64.StdEncoding.EncodeToString([]byte("opencode:"+cfg.password))
	defer opClient.close()
	clients := make([]*client, agents)
	for i := range clients {
		clients[i] = newClient(base, 2)
		_, token, _ := strings.Cut(cfg.tokens[i], "=")
		clients[i].authorization = "Bearer " + token
		defer clients[i].close()
	}
	op, err := startOperator(context.Background(), opClient, agents)
	if err != nil {
		r.err = err
		return r
	}
	defer op.stop()
	if _, _, err := roundTripsUntil(op, clients, func(done int) bool { return done >= 2 }); err != nil {
		r.err = fmt.Errorf("warming up: %w", err)
		return r
	}
	deadline := time.Now().Add(cfg.duration)
	start, cpuBefore := time.Now(), cpuTime(b, p.pid())
	r.roundTrips, r.latencies, r.err = roundTripsUntil(op, clients, func(int) bool { return time.Now().After(deadline) })
	r.elapsed, r.cpu = time.Since(start), cpuTime(b, p.pid())-cpuBefore
	if kib, err := residentKiB(p.pid()); err == nil {
		r.rssKiB = kib
	}
	return r
}

// roundTripsUntil has every agent make round trips, one at a time, until
// stop (given how many that agent has made) says so; it returns how many
// were made, their latencies, and the first failure, which ends them all.
func roundTripsUntil(op *operator, clients []*client, stop func(done int) bool) (int, []time.Duration, error) {
	var (
		made      atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
		wg        sync.WaitGroup
	)
	for _, c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for done := 0; !stop(done); done++ {
				sent := time.Now()
				if err := roundTrip(op.ctx, c); err != nil {
					op.fail(err)
					break
				}
				mine = append(mine, time.Since(sent))
				made.Add(1)
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if op.ctx.Err() != nil {
		return int(made.Load()), latencies, context.Cause(op.ctx)
	}
	return int(made.Load()), latencies, nil
}

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports but alpha).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time process pid has used so far, user and system.
func cpuTime(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count after it.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * clockTick
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}

// binariesTable is the runs as Markdown: per store and agent count each
// binary's median round trips/s (and the ratio to the first binary), its
// median p50 and p99 latencies and RSS after the run, then every run.
func binariesTable(cfg *binariesSettings, all []binariesRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s; Go %s, %s/%s, %d CPUs; %d runs of %v per binary and case (after two round trips per agent of warm-up), binaries alternating; load average (1 min) from %s to %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
		cfg.runs, cfg.duration, minLoad(all), maxLoad(all))
	fmt.Fprintf(&b, "Binaries: ")
	for i, bin := range cfg.binaries {
		version, _ := exec.Command(bin.path, "--version").Output()
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = `%s`", bin.name, strings.TrimSpace(string(version)))
	}
	fmt.Fprintf(&b, "; flags: `--store S --rate-limit %s` %s(and a free port, JSON logs), %d agent tokens and an operator password\n\n",
		binariesRateLimit, flagsNote(cfg.flags), binariesTokens)
	first := cfg.binaries[0].name
	b.WriteString("| store | agents |")
	for _, bin := range cfg.binaries {
		fmt.Fprintf(&b, " %s round trips/s |", bin.name)
	}
	for _, bin := range cfg.binaries[1:] {
		fmt.Fprintf(&b, " %s / %s |", bin.name, first)
	}
	for _, bin := range cfg.binaries {
		fmt.Fprintf(&b, " %s CPU µs per round trip |", bin.name)
	}
	for _, bin := range cfg.binaries[1:] {
		fmt.Fprintf(&b, " CPU %s / %s |", bin.name, first)
	}
	for _, bin := range cfg.binaries {
		fmt.Fprintf(&b, " %s p50 / p99 ms |", bin.name)
	}
	for _, bin := range cfg.binaries {
		fmt.Fprintf(&b, " %s RSS MiB |", bin.name)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", 6*len(cfg.binaries)-2) + "\n")
	for _, store := range cfg.stores {
		for _, agents := range cfg.agents {
			medians := map[string]float64{}
			fmt.Fprintf(&b, "| %s | %d |", store, agents)
			for _, bin := range cfg.binaries {
				runs := pick(all, bin.name, store, agents)
				medians[bin.name] = medianOf(runs, binariesRun.perSecond)
				fmt.Fprintf(&b, " %.0f%s |", medians[bin.name], failedNote(runs))
			}
			for _, bin := range cfg.binaries[1:] {
				fmt.Fprintf(&b, " **%.3f** |", medians[bin.name]/medians[first])
			}
			cpu := map[string]float64{}
			for _, bin := range cfg.binaries {
				cpu[bin.name] = medianOf(pick(all, bin.name, store, agents), binariesRun.cpuPerRoundTrip)
				fmt.Fprintf(&b, " %.0f |", cpu[bin.name])
			}
			for _, bin := range cfg.binaries[1:] {
				fmt.Fprintf(&b, " %.3f |", cpu[bin.name]/cpu[first])
			}
			for _, bin := range cfg.binaries {
				runs := pick(all, bin.name, store, agents)
				fmt.Fprintf(&b, " %.2f / %.2f |",
					medianOf(runs, func(r binariesRun) float64 { return ms(r.quantile(0.5)) }),
					medianOf(runs, func(r binariesRun) float64 { return ms(r.quantile(0.99)) }))
			}
			for _, bin := range cfg.binaries {
				fmt.Fprintf(&b, " %.0f |", medianOf(pick(all, bin.name, store, agents), func(r binariesRun) float64 { return float64(r.rssKiB) / 1024 }))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nEvery run, in the order run (round trips/s, the server's CPU µs per round trip, load average at its start):\n\n")
	for _, store := range cfg.stores {
		for _, agents := range cfg.agents {
			fmt.Fprintf(&b, "- %s, %d agents:", store, agents)
			for _, bin := range cfg.binaries {
				fmt.Fprintf(&b, " %s", bin.name)
				for i, r := range pick(all, bin.name, store, agents) {
					sep := ","
					if i == 0 {
						sep = ""
					}
					if r.err != nil {
						fmt.Fprintf(&b, "%s failed after %d (%v) @%s", sep, r.roundTrips, r.err, r.load)
						continue
					}
					fmt.Fprintf(&b, "%s %.0f (%.0f µs) @%s", sep, r.perSecond(), r.cpuPerRoundTrip(), r.load)
				}
				b.WriteString(";")
			}
			b.WriteString("\n")
		}
	}
	var capped []string
	for _, r := range all {
		if r.capped != "" {
			capped = append(capped, fmt.Sprintf("%s %s %d agents run %d", r.binary, r.store, r.agents, r.run))
		}
	}
	if len(capped) > 0 {
		fmt.Fprintf(&b, "\nRuns in which the server logged that a connection cap closed or refused connections (%q): %s.\n", connectionCapLog, strings.Join(capped, "; "))
	}
	return b.String()
}

func pick(all []binariesRun, name, store string, agents int) []binariesRun {
	var runs []binariesRun
	for _, r := range all {
		if r.binary == name && r.store == store && r.agents == agents {
			runs = append(runs, r)
		}
	}
	return runs
}

// medianOf is the median of figure over the runs that did not fail.
func medianOf(runs []binariesRun, figure func(binariesRun) float64) float64 {
	var values []float64
	for _, r := range runs {
		if r.err == nil {
			values = append(values, figure(r))
		}
	}
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	if len(values)%2 == 1 {
		return values[len(values)/2]
	}
	return (values[len(values)/2-1] + values[len(values)/2]) / 2
}

func failedNote(runs []binariesRun) string {
	failed := 0
	for _, r := range runs {
		if r.err != nil {
			failed++
		}
	}
	if failed == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of %d runs failed)", failed, len(runs))
}

func flagsNote(flags []string) string {
	if len(flags) == 0 {
		return ""
	}
	return "`" + strings.Join(flags, " ") + "` "
}

func minLoad(all []binariesRun) string { return extremeLoad(all, -1) }
func maxLoad(all []binariesRun) string { return extremeLoad(all, 1) }

func extremeLoad(all []binariesRun, sign float64) string {
	best, found := 0.0, ""
	for _, r := range all {
		v, err := strconv.ParseFloat(r.load, 64)
		if err != nil {
			continue
		}
		if found == "" || sign*v > sign*best {
			best, found = v, r.load
		}
	}
	return found
}
