package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// config is every setting of the daemon. Each has a flag and a QUESTIOND_*
// environment variable twin; a flag on the command line wins.
type config struct {
	addr              string
	store             string
	dataDir           string
	logLevel          string
	logFormat         string
	heartbeat         time.Duration
	defaultTimeout    time.Duration
	maxTimeout        time.Duration
	maxWait           time.Duration
	keepAlive         time.Duration
	retention         time.Duration
	maxBody           int64
	maxProperties     int
	headerLimit       int
	eventQueue        int
	eventWriteTimeout time.Duration
	maxDirectories    int
	cors              string
	shutdownTimeout   time.Duration
	showVersion       bool
}

const usageHeader = `questiond lets AI agents ask a human structured questions.

Agents send MCP elicitation requests (POST /elicit, POST /elicitations);
operators answer them with any OpenCode client (GET /question,
POST /question/{id}/reply, GET /event).

Usage:
  questiond [flags]

Every flag can also be set with the environment variable shown beside it;
a flag given on the command line wins over the environment.

Flags:
`

// parseConfig reads args and the environment into a config.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("questiond", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:4097", "`host:port` to listen on")
	fs.StringVar(&c.store, "store", "bolt", "where questions are kept: `bolt` (durable, in --data-dir; survives restarts) or memory (lost on restart)")
	fs.StringVar(&c.dataDir, "data-dir", "", "`directory` of the durable store (default $XDG_STATE_HOME/questiond, or ~/.local/state/questiond)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "auto", "log `format`: console, json, or auto (console on a terminal, JSON otherwise)")
	fs.DurationVar(&c.heartbeat, "heartbeat", 10*time.Second, "`interval` of server.heartbeat events on event streams")
	fs.DurationVar(&c.defaultTimeout, "default-timeout", time.Hour, "`time` after which an unanswered question ends as cancel, unless the request sets its own timeout")
	fs.DurationVar(&c.maxTimeout, "max-timeout", 7*24*time.Hour, "longest `timeout` a request may ask for")
	fs.DurationVar(&c.maxWait, "max-wait", 5*time.Minute, "longest `wait` of one GET /elicitations/{id}?wait= long-poll")
	fs.DurationVar(&c.keepAlive, "keepalive", 20*time.Second, "`interval` of keep-alive whitespace while POST /elicit waits")
	fs.DurationVar(&c.retention, "retention", time.Hour, "how long an ended question's result stays readable by its agent (`duration`)")
	fs.Int64Var(&c.maxBody, "max-body", 1<<20, "largest request body in `bytes`")
	fs.IntVar(&c.maxProperties, "max-properties", 50, "most `properties` (questions) one elicitation may have")
	fs.IntVar(&c.headerLimit, "header-limit", 30, "longest question header in `runes` (12 for OpenCode TUIs before 1.1.26)")
	fs.IntVar(&c.eventQueue, "event-queue", 1024, "`frames` queued for one event subscriber before it is cut off as too slow")
	fs.DurationVar(&c.eventWriteTimeout, "event-write-timeout", 10*time.Second, "`time` allowed to write one event frame before the subscriber is cut off")
	fs.IntVar(&c.maxDirectories, "max-directories", 1024, "most distinct `directories` with a live /event stream")
	fs.StringVar(&c.cors, "cors", "", "extra allowed browser `origins`, comma-separated (OpenCode's own allowlist always applies)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "longest `time` a graceful shutdown may take")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")

	fs.Usage = func() {
		fmt.Fprint(out, usageHeader)
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if name != "" {
				line += " " + name
			}
			fmt.Fprintf(out, "%s\n    \t%s (default %q, env %s)\n", line, usage, f.DefValue, envName(f.Name))
		})
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "version" {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, c.check()
}

func envName(flagName string) string {
	return "QUESTIOND_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// check refuses settings that cannot work, naming the flag.
func (c *config) check() error {
	positive := map[string]time.Duration{
		"heartbeat": c.heartbeat, "default-timeout": c.defaultTimeout, "max-timeout": c.maxTimeout,
		"max-wait": c.maxWait, "keepalive": c.keepAlive, "retention": c.retention,
		"event-write-timeout": c.eventWriteTimeout, "shutdown-timeout": c.shutdownTimeout,
	}
	for name, d := range positive {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	counts := map[string]int64{
		"max-body": c.maxBody, "max-properties": int64(c.maxProperties), "header-limit": int64(c.headerLimit),
		"event-queue": int64(c.eventQueue), "max-directories": int64(c.maxDirectories),
	}
	for name, n := range counts {
		if n <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", name, n)
		}
	}
	if c.defaultTimeout > c.maxTimeout {
		return fmt.Errorf("--default-timeout %s is longer than --max-timeout %s", c.defaultTimeout, c.maxTimeout)
	}
	if c.headerLimit < 4 {
		return fmt.Errorf("--header-limit must be at least 4 runes, got %d", c.headerLimit)
	}
	switch c.store {
	case "bolt", "memory":
	default:
		return fmt.Errorf("--store must be bolt or memory, got %q", c.store)
	}
	switch c.logFormat {
	case "auto", "console", "json":
	default:
		return fmt.Errorf("--log-format must be auto, console or json, got %q", c.logFormat)
	}
	return nil
}

// databasePath is the file of the durable store: --data-dir, else the user's
// state directory ($XDG_STATE_HOME, or ~/.local/state) plus "questiond".
func (c *config) databasePath(getenv func(string) string) (string, error) {
	dir := c.dataDir
	if dir == "" {
		state := getenv("XDG_STATE_HOME")
		if state == "" {
			home := getenv("HOME")
			if home == "" {
				return "", errors.New("no data directory: set --data-dir (QUESTIOND_DATA_DIR), XDG_STATE_HOME or HOME, or use --store memory")
			}
			state = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(state, "questiond")
	}
	return filepath.Join(dir, "questiond.db"), nil
}

func (c *config) corsOrigins() []string {
	var out []string
	for _, o := range strings.Split(c.cors, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}
