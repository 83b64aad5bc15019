package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
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
	reconnectGrace    time.Duration
	retention         time.Duration
	maxRetained       int
	maxBody           int64
	maxProperties     int
	headerLimit       int
	eventQueue        int
	eventWriteTimeout time.Duration
	maxDirectories    int
	cors              string
	shutdownTimeout   time.Duration
	showVersion       bool

	allowedHosts       string
	insecure           bool
	consoleFollow      bool
	tlsCert, tlsKey    string
	agentTokenFile     string
	maxPending         int
	maxPendingPerAgent int
	maxStreams         int
	rateLimit          int
	defaultCapability  string
	maxSessions        int
	maxMCPSessions     int
	mcpIdleTimeout     time.Duration
	publicURL          string
	notifyIncludeText  bool
	notifyMaxAge       time.Duration
	notifyQueue        int

	// Secrets come from the environment only, never from flags that any
	// local user can read in the process list.
	operatorUsername string
	operatorPassword string
	agentTokens      map[string]string
	notifyURLs       []string // webhook URLs hold tokens too
	notifySecret     string
}

const usageHeader = `questiond lets AI agents ask a human structured questions.

Agents send MCP elicitation requests (POST /elicit, POST /elicitations);
operators answer them in a browser at /ui (GET / redirects there) or with
any OpenCode client (GET /question, POST /question/{id}/reply, GET /event).

Usage:
  questiond [flags]        run the daemon
  questiond ask [flags]    ask a question from a script (see questiond ask --help)

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
	fs.DurationVar(&c.heartbeat, "heartbeat", sse.DefaultHeartbeat, "`interval` of server.heartbeat events on event streams")
	fs.DurationVar(&c.defaultTimeout, "default-timeout", httpapi.DefaultTimeout, "`time` after which an unanswered question ends as cancel, unless the request sets its own timeout")
	fs.DurationVar(&c.maxTimeout, "max-timeout", httpapi.DefaultMaxTimeout, "longest `timeout` a request may ask for")
	fs.DurationVar(&c.maxWait, "max-wait", httpapi.DefaultMaxWait, "longest `wait` of one GET /elicitations/{id}?wait= long-poll")
	fs.DurationVar(&c.keepAlive, "keepalive", httpapi.DefaultKeepAlive, "`interval` of keep-alive whitespace while POST /elicit waits, and of MCP progress notifications while a question tool waits")
	fs.DurationVar(&c.reconnectGrace, "reconnect-grace", httpapi.DefaultReconnectGrace, "`time` a POST /elicit with an Idempotency-Key whose connection dropped keeps its question for a retry with that key, before withdrawing it")
	fs.DurationVar(&c.retention, "retention", pending.DefaultRetention, "how long an ended question's result stays readable by its agent (`duration`)")
	fs.IntVar(&c.maxRetained, "max-retained", pending.DefaultMaxRetained, "most ended questions whose `results` stay readable; beyond it the oldest result is forgotten (404) before its --retention is over")
	fs.Int64Var(&c.maxBody, "max-body", httpapi.DefaultMaxBodyBytes, "largest request body in `bytes`")
	fs.IntVar(&c.maxProperties, "max-properties", elicit.DefaultMaxProperties, "most `properties` (questions) one elicitation may have")
	fs.IntVar(&c.headerLimit, "header-limit", elicit.DefaultHeaderLimit, "longest question header in `runes` (12 for OpenCode TUIs before 1.1.26)")
	fs.IntVar(&c.eventQueue, "event-queue", sse.DefaultQueueLength, "`frames` queued for one event subscriber before it is cut off as too slow")
	fs.DurationVar(&c.eventWriteTimeout, "event-write-timeout", sse.DefaultWriteTimeout, "`time` allowed to write one event frame before the subscriber is cut off")
	fs.IntVar(&c.maxDirectories, "max-directories", sse.DefaultMaxScopes, "most distinct `directories` with a live /event stream")
	fs.StringVar(&c.cors, "cors", "", "extra allowed browser `origins`, comma-separated (OpenCode's own allowlist always applies)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, fmt.Sprintf("longest `time` a graceful shutdown may take (event streams get at most %s of it to send their last events; a second SIGINT or SIGTERM exits at once)", daemon.DefaultStreamGrace))
	fs.StringVar(&c.allowedHosts, "allowed-hosts", "", "extra `names` this server is reached by, comma-separated; other Host headers get 421 (DNS-rebinding guard)")
	fs.BoolVar(&c.consoleFollow, "console-follow", false, "after the operator answers a session's last question, move every attached OpenCode TUI to the next session with a pending question")
	fs.BoolVar(&c.insecure, "insecure", false, "allow listening beyond loopback without operator and agent credentials (dangerous)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate `file` (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key `file` (PEM)")
	fs.StringVar(&c.agentTokenFile, "agent-token-file", "", "`file` of agent tokens, one name=token per line (# comments); adds to QUESTIOND_AGENT_TOKENS")
	fs.IntVar(&c.maxPending, "max-pending", 10000, "most pending `questions` in total (429 beyond)")
	fs.IntVar(&c.maxPendingPerAgent, "max-pending-per-agent", 1000, "most pending `questions` of one agent token (429 beyond)")
	fs.IntVar(&c.maxStreams, "max-streams", 1000, "most open event `streams` (503 beyond)")
	fs.IntVar(&c.rateLimit, "rate-limit", 6000, "most `requests` per minute from one client (an agent, the operator, or an IP); 0 means no limit")
	fs.StringVar(&c.defaultCapability, "default-question-capability", "user", "question `capability` of sessions nobody set with PUT /sessions/{id}: user (may ask the operator) or none (may ask nobody)")
	fs.IntVar(&c.maxSessions, "max-sessions", 100000, "most session records kept by PUT /sessions/{id} (429 beyond)")
	fs.IntVar(&c.maxMCPSessions, "max-mcp-sessions", 1000, "most live MCP sessions on /mcp (503 beyond)")
	fs.DurationVar(&c.mcpIdleTimeout, "mcp-idle-timeout", httpapi.DefaultMCPIdle, "close an MCP session (/mcp) after this `duration` without requests; a tool call in progress keeps it open")
	fs.StringVar(&c.publicURL, "public-url", "", "`URL` operators reach questiond at, for the link to its /ui page in notifications (default: http(s):// and the address questiond listens on, localhost for an unspecified host)")
	fs.BoolVar(&c.notifyIncludeText, "notify-include-text", false, "put the agent's message, the questions and the answers in webhook notifications (by default they name who asks where, not what)")
	fs.DurationVar(&c.notifyMaxAge, "notify-max-age", notify.DefaultMaxAge, fmt.Sprintf("give up on a webhook notification not delivered within this `duration` (retries back off from %s to %s)", notify.DefaultMinBackoff, notify.DefaultMaxBackoff))
	fs.IntVar(&c.notifyQueue, "notify-queue", notify.DefaultQueueLength, "most `notifications` waiting for one webhook; beyond it the oldest is dropped")
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
		fmt.Fprint(out, secretsHelp)
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
	if err := c.readSecrets(getenv); err != nil {
		return nil, err
	}
	return c, c.check()
}

const secretsHelp = `
Credentials and webhooks (environment only, so they never show in the process list):
  QUESTIOND_OPERATOR_PASSWORD   operators' password (HTTP Basic, as OpenCode clients send it);
                                OPENCODE_SERVER_PASSWORD is honoured too
  QUESTIOND_OPERATOR_USERNAME   operators' user name (default "opencode");
                                OPENCODE_SERVER_USERNAME is honoured too
  QUESTIOND_AGENT_TOKENS        agents' bearer tokens: name=token,name=token (tokens of 16+ characters)
  QUESTIOND_NOTIFY_URLS         webhooks told of every new question and ending, comma-separated
                                http(s) URLs (a Slack or Mattermost incoming webhook is one)
  QUESTIOND_NOTIFY_SECRET       signs webhook deliveries (X-Questiond-Signature; 16+ characters)
Without credentials questiond serves loopback addresses only.
`

// readSecrets reads the operator's credentials and the agents' tokens from
// the environment and the token file.
func (c *config) readSecrets(getenv func(string) string) error {
	c.operatorPassword = firstOf(getenv, "QUESTIOND_OPERATOR_PASSWORD", "OPENCODE_SERVER_PASSWORD")
	c.operatorUsername = firstOf(getenv, "QUESTIOND_OPERATOR_USERNAME", "OPENCODE_SERVER_USERNAME")
	c.notifySecret = getenv("QUESTIOND_NOTIFY_SECRET")
	if c.notifySecret != "" && len(c.notifySecret) < 16 {
		return errors.New("QUESTIOND_NOTIFY_SECRET must be at least 16 characters")
	}
	c.notifyURLs = c.splitList(getenv("QUESTIOND_NOTIFY_URLS"))
	for i, u := range c.notifyURLs {
		if err := notify.CheckURL(u); err != nil {
			return fmt.Errorf("QUESTIOND_NOTIFY_URLS: entry %d: %w", i+1, err) // never the URL: it may hold a token
		}
	}
	c.agentTokens = map[string]string{}
	if env := getenv("QUESTIOND_AGENT_TOKENS"); env != "" {
		if err := addTokens(c.agentTokens, strings.Split(env, ","), "QUESTIOND_AGENT_TOKENS"); err != nil {
			return err
		}
	}
	if c.agentTokenFile != "" {
		data, err := os.ReadFile(c.agentTokenFile)
		if err != nil {
			return fmt.Errorf("--agent-token-file: %w", err)
		}
		if err := addTokens(c.agentTokens, strings.Split(string(data), "\n"), c.agentTokenFile); err != nil {
			return err
		}
	}
	return nil
}

func firstOf(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// addTokens parses name=token entries; the error names the source and the
// entry's position, never the token.
func addTokens(into map[string]string, entries []string, source string) error {
	for i, entry := range entries {
		entry = strings.TrimSpace(entry)
		if entry == "" || strings.HasPrefix(entry, "#") {
			continue
		}
		name, token, ok := strings.Cut(entry, "=")
		name, token = strings.TrimSpace(name), strings.TrimSpace(token)
		if !ok || name == "" || token == "" {
			return fmt.Errorf("%s: entry %d is not name=token", source, i+1)
		}
		if _, dup := into[name]; dup {
			return fmt.Errorf("%s: agent %q is listed twice", source, name)
		}
		into[name] = token
	}
	return nil
}

func envName(flagName string) string {
	return "QUESTIOND_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// check refuses settings that cannot work, naming the flag.
func (c *config) check() error {
	positive := map[string]time.Duration{
		"heartbeat": c.heartbeat, "default-timeout": c.defaultTimeout, "max-timeout": c.maxTimeout,
		"max-wait": c.maxWait, "keepalive": c.keepAlive, "retention": c.retention, "reconnect-grace": c.reconnectGrace,
		"event-write-timeout": c.eventWriteTimeout, "shutdown-timeout": c.shutdownTimeout,
		"notify-max-age": c.notifyMaxAge,
	}
	for name, d := range positive {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	counts := map[string]int64{
		"max-body": c.maxBody, "max-properties": int64(c.maxProperties), "header-limit": int64(c.headerLimit),
		"event-queue": int64(c.eventQueue), "max-directories": int64(c.maxDirectories),
		"max-retained": int64(c.maxRetained), "notify-queue": int64(c.notifyQueue),
	}
	for name, n := range counts {
		if n <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", name, n)
		}
	}
	if c.defaultTimeout > c.maxTimeout {
		return fmt.Errorf("--default-timeout %s is longer than --max-timeout %s", c.defaultTimeout, c.maxTimeout)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if c.maxPending < 0 || c.maxPendingPerAgent < 0 || c.maxStreams < 0 || c.rateLimit < 0 {
		return errors.New("--max-pending, --max-pending-per-agent, --max-streams and --rate-limit must not be negative")
	}
	switch c.defaultCapability {
	case "user", "none":
	default:
		return fmt.Errorf("--default-question-capability must be user or none, got %q", c.defaultCapability)
	}
	if c.maxSessions <= 0 || c.maxMCPSessions <= 0 || c.mcpIdleTimeout <= 0 {
		return errors.New("--max-sessions, --max-mcp-sessions and --mcp-idle-timeout must be positive")
	}
	if c.headerLimit < 4 {
		return fmt.Errorf("--header-limit must be at least 4 runes, got %d", c.headerLimit)
	}
	if c.publicURL != "" {
		if err := notify.CheckURL(c.publicURL); err != nil {
			return fmt.Errorf("--public-url %q: %w", c.publicURL, err)
		}
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

// exposed reports whether --addr reaches beyond this machine.
func (c *config) exposed() bool {
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		host = c.addr
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip == nil || !ip.IsLoopback()
}

// checkExposure refuses to serve beyond loopback unless both roles have
// credentials, or --insecure says so.
func (c *config) checkExposure() (warning string, err error) {
	if !c.exposed() || (c.operatorPassword != "" && len(c.agentTokens) > 0) {
		return "", nil
	}
	if !c.insecure {
		return "", fmt.Errorf("refusing to listen on %s without credentials: anyone who reaches it could answer or ask questions. "+
			"Set QUESTIOND_OPERATOR_PASSWORD and QUESTIOND_AGENT_TOKENS (or --agent-token-file), listen on 127.0.0.1, or pass --insecure", c.addr)
	}
	return "INSECURE: listening beyond loopback without operator and agent credentials; anyone who reaches " + c.addr + " can answer and ask questions", nil
}

func (c *config) splitList(list string) []string {
	var out []string
	for _, o := range strings.Split(list, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

func (c *config) corsOrigins() []string { return c.splitList(c.cors) }
