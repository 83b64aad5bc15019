// Command sidebyside measures questiond beside OpenCode's own server (the
// pinned opencode-ai from npm) and a bare net/http server sending the same
// bytes, with one load generator for all: the operator's GET /question with
// nothing and with many questions pending, replies, replies to an unknown
// id, and resident memory idle, per event subscriber and per pending
// question. It prints one Markdown table of the figures and of questiond's
// ratios to the others. `make bench-opencode` (bench/opencode.sh) builds
// questiond and runs it; BENCHMARKS.md keeps a run's output.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/questiond/questiond/bench/bare"
	"github.com/questiond/questiond/internal/opencodenpm"
)

// config is what one run measures, and with what.
type config struct {
	questiond       string // the questiond binary
	opencodeVersion string
	opencodeFound   string // what the installed binary says its version is
	work            string // scratch directory: logs, data, OpenCode's home
	servers         []string
	conns           int
	duration        time.Duration
	warmup          time.Duration
	settle          time.Duration
	pending         int
	rounds          int
	subscribers     int
	seed            []byte // questiond's GET /question body with pending questions, for the bare server
}

// allServers are the systems compared, in the order they run: the bare
// server needs questiond's bytes.
var allServers = []string{"questiond", "questiond-bolt", "opencode", "bare"}

func main() {
	serveBareFlag := flag.Bool("serve-bare", false, "run as the bare server (used by this program itself)")
	cfg := &config{}
	var servers string
	flag.StringVar(&cfg.questiond, "questiond", "", "questiond binary to measure (required)")
	flag.StringVar(&cfg.opencodeVersion, "opencode-version", opencodenpm.Pinned, "opencode-ai release to install from npm and measure")
	flag.StringVar(&cfg.work, "work", "", "scratch directory for logs and data (default: a new temporary one, removed after)")
	flag.StringVar(&servers, "servers", strings.Join(allServers, ","), "servers to measure, a comma-separated subset of "+strings.Join(allServers, ","))
	flag.IntVar(&cfg.conns, "conns", 64, "concurrent connections of the load generator")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "how long each timed case runs")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load before each timed case")
	flag.DurationVar(&cfg.settle, "settle", 2*time.Second, "wait before each memory reading")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds of each timed case; the servers take turns within a round, and the table gives the median round")
	flag.IntVar(&cfg.pending, "pending", 200, "questions pending for the second GET /question case and the replies")
	flag.IntVar(&cfg.subscribers, "subscribers", 100, "idle /event subscribers for the memory per subscriber")
	flag.Parse()
	if *serveBareFlag {
		if err := bare.Serve(); err != nil {
			fmt.Fprintln(os.Stderr, "bare server:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(cfg, servers, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-opencode:", err)
		os.Exit(1)
	}
}

// run measures the servers named in servers (comma-separated) and writes
// the table to out; progress goes to standard error.
func run(cfg *config, servers string, out io.Writer) error {
	if cfg.questiond == "" {
		return fmt.Errorf("-questiond is required (the binary to measure)")
	}
	if cfg.conns < 1 || cfg.rounds < 1 || cfg.pending < 1 || cfg.subscribers < 1 || cfg.duration <= 0 {
		return fmt.Errorf("-conns, -rounds, -pending, -subscribers and -duration must be positive")
	}
	for _, name := range strings.Split(servers, ",") {
		if !slices.Contains(allServers, name) {
			return fmt.Errorf("-servers: unknown server %q (known: %s)", name, strings.Join(allServers, ","))
		}
	}
	for _, name := range allServers {
		if slices.Contains(strings.Split(servers, ","), name) {
			cfg.servers = append(cfg.servers, name)
		}
	}
	if cfg.work == "" {
		dir, err := os.MkdirTemp("", "bench-opencode-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.work = dir
	}
	abs, err := filepath.Abs(cfg.questiond)
	if err != nil {
		return err
	}
	cfg.questiond = abs
	header := describeRun(cfg)
	var targets []*target
	defer func() {
		for _, t := range targets {
			_ = t.proc.stop()
			if t.cleanup != nil {
				t.cleanup()
			}
		}
	}()
	for _, name := range cfg.servers {
		fmt.Fprintf(os.Stderr, "starting %s\n", name)
		t, err := start(cfg, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		targets = append(targets, t)
	}
	results, err := measureAll(cfg, targets)
	if err != nil {
		return err
	}
	for _, t := range targets {
		// Each must still be running: one that died mid-run measured nothing.
		select {
		case <-t.proc.Exited():
			return fmt.Errorf("%s exited during the run (%v); see %s", t.name, t.proc.Err(), t.proc.log)
		default:
		}
	}
	fmt.Fprint(out, header)
	if cfg.opencodeFound != "" {
		fmt.Fprintf(out, "- opencode-ai: %s (`opencode --version`), `opencode serve` offline with a fake model (an OpenAI-compatible endpoint in the load generator's process) that asks the same two questions with OpenCode's question tool\n", cfg.opencodeFound)
	}
	fmt.Fprintln(out)
	fmt.Fprint(out, table(cfg, results))
	return nil
}

func start(cfg *config, name string) (*target, error) {
	switch name {
	case "questiond":
		return startQuestiond(cfg, name, "memory")
	case "questiond-bolt":
		return startQuestiond(cfg, name, "bolt")
	case "opencode":
		return startOpencode(cfg)
	default:
		return startBare(cfg)
	}
}
