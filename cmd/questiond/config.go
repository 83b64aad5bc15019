package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/questiond/questiond/internal/daemon"
)

// config is every setting of the daemon. Each has a flag and a QUESTIOND_*
// environment variable twin; a flag on the command line wins.
type config struct {
	addr              string
	metricsAddr       string
	metricsExplicit   bool // --metrics-addr or its variable was given
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
	maxRetainedAgent  int
	keyRetention      time.Duration
	maxBytes          int64
	maxBytesAgent     int64
	maxBody           int64
	maxProperties     int
	maxOptions        int
	headerLimit       int
	eventQueue        int
	eventQueueBytes   int
	eventWriteTimeout time.Duration
	maxDirectories    int
	cors              string
	shutdownTimeout   time.Duration
	bodyReadTimeout   time.Duration
	maxConns          int
	maxConnsPerAddr   int
	maxConnsPerAgent  int
	operatorReserve   int
	showVersion       bool

	allowedHosts       string
	insecure           bool
	consoleFollow      bool
	tlsCert, tlsKey    string
	agentTokenFile     string
	maxPending         int
	maxPendingPerAgent int
	maxStreams         int
	maxMCPStreams      int
	maxMCPStreamsAgent int
	maxMCPSessionAgent int
	rateLimit          int
	defaultCapability  string
	maxSessions        int
	sessionsPerAgent   int
	maxMCPSessions     int
	mcpIdleTimeout     time.Duration
	publicURL          string
	notifyIncludeText  bool
	notifyMaxAge       time.Duration
	notifyQueue        int
	notifyLease        time.Duration

	// Secrets come from the environment only, never from flags that any
	// local user can read in the process list.
	operatorUsername                   string
	operatorPassword                   string
	upstream                           string // --upstream
	upstreamUsername, upstreamPassword string // the upstream server's own credentials
	agentTokens                        map[string]string
	notifyURLs                         []string // webhook URLs hold tokens too
	notifySecret                       string
	databaseURL                        string // --store postgres: a libpq URL, which may hold a password
}

const usageHeader = `questiond lets AI agents ask a human structured questions.

Agents send MCP elicitation requests (POST /elicit, POST /elicitations);
operators answer them in a browser at /ui (GET / redirects there) or with
any OpenCode client (GET /question, POST /question/{id}/reply, GET /event).

Usage:
  questiond [flags]        run the daemon
  questiond ask [flags]    ask a question from a script (see questiond ask --help)
  questiond health [flags] exit 0 if the daemon here is up, for container health checks
                           (see questiond health --help)
  questiond migrate        copy the bbolt database into PostgreSQL (see questiond migrate --help)

Every flag can also be set with the environment variable shown beside it;
a flag given on the command line wins over the environment.

Flags:
`

// defaultAddr is where the daemon listens, and `questiond health` probes,
// unless told otherwise.
const defaultAddr = "127.0.0.1:4097"

// parseConfig reads args and the environment into a config.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("questiond", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.addr, "addr", defaultAddr, "`host:port` to listen on, like 127.0.0.1:4097 (:4097 is every interface)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", defaultMetricsAddr, "`host:port` serving GET /metrics (Prometheus) to scrapers, without credentials, or off (:9464 is every interface)")
	fs.StringVar(&c.store, "store", "bolt", "where questions are kept, `bolt|memory|postgres`: bolt is durable (a file in --data-dir; survives restarts), memory is lost on restart, postgres is the database QUESTIOND_DATABASE_URL names, shared by several replicas")
	fs.StringVar(&c.dataDir, "data-dir", "", "`dir` of the durable store (questiond.db, and its write-ahead log questiond.db-wal.0 and .1 while questiond runs); by default $XDG_STATE_HOME/questiond, else ~/.local/state/questiond")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `debug|info|warn|error` messages and worse")
	fs.StringVar(&c.logFormat, "log-format", "auto", "log format, `auto|console|json`: auto is console on a terminal, JSON otherwise; console lines are coloured on a terminal only")
	c.heartbeat = daemon.DefaultHeartbeat
	fs.Var(durationValue{&c.heartbeat}, "heartbeat", "interval (a `duration`) of server.heartbeat events on event streams")
	c.defaultTimeout = daemon.DefaultTimeout
	fs.Var(durationValue{&c.defaultTimeout}, "default-timeout", "an unanswered question ends as cancel after this `duration`, unless the request sets its own timeout")
	c.maxTimeout = daemon.DefaultMaxTimeout
	fs.Var(durationValue{&c.maxTimeout}, "max-timeout", "longest timeout (a `duration`) a request may ask for")
	c.maxWait = daemon.DefaultMaxWait
	fs.Var(durationValue{&c.maxWait}, "max-wait", "longest wait (a `duration`) of one GET /elicitations/{id}?wait= long-poll")
	c.keepAlive = daemon.DefaultKeepAlive
	fs.Var(durationValue{&c.keepAlive}, "keepalive", "interval (a `duration`) of keep-alive whitespace while POST /elicit waits, and of MCP progress notifications while a question tool waits")
	c.reconnectGrace = daemon.DefaultReconnectGrace
	fs.Var(durationValue{&c.reconnectGrace}, "reconnect-grace", "how long (a `duration`) a POST /elicit with an Idempotency-Key whose connection dropped keeps its question for a retry with that key, before withdrawing it")
	c.retention = daemon.DefaultRetention
	fs.Var(durationValue{&c.retention}, "retention", "how long (a `duration`) an ended question's result stays readable by its agent")
	c.maxRetained = daemon.DefaultMaxRetained
	fs.Var(intValue[int]{&c.maxRetained}, "max-retained", "most (`n`) ended questions whose results stay readable; beyond it the oldest result is forgotten (404) before its --retention is over")
	c.maxRetainedAgent = daemon.DefaultMaxRetainedPerAgent
	fs.Var(intValue[int]{&c.maxRetainedAgent}, "max-retained-per-agent", "most (`n`) ended questions of one agent token whose results stay readable; beyond it, or beyond --max-retained, the agent holding the most results forgets its oldest, never another agent's first")
	c.keyRetention = daemon.DefaultKeyRetention
	fs.Var(durationValue{&c.keyRetention}, "key-retention", "how long (a `duration`, at least --retention) the Idempotency-Key of a forgotten result is remembered: a retry with it gets 410 QuestionGoneError instead of asking again")
	c.maxBytes = daemon.DefaultMaxBytes
	fs.Var(intValue[int64]{&c.maxBytes}, "max-bytes", "byte budget (`n`) over every pending question and retained result (their text); a create beyond it, once the agent's own oldest results are forgotten, is refused with 429")
	c.maxBytesAgent = daemon.DefaultMaxBytesPerAgent
	fs.Var(intValue[int64]{&c.maxBytesAgent}, "max-bytes-per-agent", "byte budget (`n`) of one agent token's pending questions and retained results; a create beyond it, once its own oldest results are forgotten, is refused with 429")
	c.maxBody = daemon.DefaultMaxBodyBytes
	fs.Var(intValue[int64]{&c.maxBody}, "max-body", "largest request body, in bytes (`n`)")
	c.maxProperties = daemon.DefaultMaxProperties
	fs.Var(intValue[int]{&c.maxProperties}, "max-properties", "most properties (questions, `n`) one elicitation may have")
	c.maxOptions = daemon.DefaultMaxOptions
	fs.Var(intValue[int]{&c.maxOptions}, "max-options", "most choices (`n`) one enum or multi-select question may offer")
	c.headerLimit = daemon.DefaultHeaderLimit
	fs.Var(intValue[int]{&c.headerLimit}, "header-limit", "longest question header, in runes (`n`; 12 for OpenCode TUIs before 1.1.26)")
	c.eventQueue = daemon.DefaultEventQueueLength
	fs.Var(intValue[int]{&c.eventQueue}, "event-queue", "frames (`n`) queued for one event subscriber before it is cut off as too slow")
	c.eventQueueBytes = daemon.DefaultEventQueueBytes
	fs.Var(intValue[int]{&c.eventQueueBytes}, "event-queue-bytes", "bytes (`n`) of frames queued for one event subscriber before it is cut off as too slow (frames carry agents' text; one larger frame still goes to a subscriber with nothing queued)")
	c.eventWriteTimeout = daemon.DefaultEventWriteTimeout
	fs.Var(durationValue{&c.eventWriteTimeout}, "event-write-timeout", "time (a `duration`) allowed to write one event frame before the subscriber is cut off")
	c.maxDirectories = daemon.DefaultMaxEventScopes
	fs.Var(intValue[int]{&c.maxDirectories}, "max-directories", "most distinct directories (`n`) with a live /event stream")
	fs.StringVar(&c.cors, "cors", "", "extra allowed browser origins, a comma-separated `list` (OpenCode's own allowlist always applies)")
	c.shutdownTimeout = daemon.DefaultShutdownTimeout
	fs.Var(durationValue{&c.shutdownTimeout}, "shutdown-timeout", fmt.Sprintf("longest time (a `duration`) a graceful shutdown may take (event streams get at most %s of it to send their last events; a second SIGINT or SIGTERM exits at once)", daemon.DefaultStreamGrace))
	c.bodyReadTimeout = daemon.DefaultBodyReadTimeout
	fs.Var(durationValue{&c.bodyReadTimeout}, "body-read-timeout", "longest time (a `duration`) a request body may take to arrive after its headers (408 and the connection closed beyond); event streams and long waits are not affected")
	c.maxConns = daemon.DefaultMaxConns
	fs.Var(intValue[int]{&c.maxConns}, "max-connections", "most open connections (`n`); lowered to fit the open-file limit; beyond it the oldest connection not being answered is closed, or the new one refused (503)")
	c.maxConnsPerAddr = daemon.DefaultMaxConnsPerAddr
	fs.Var(intValue[int]{&c.maxConnsPerAddr}, "max-connections-per-address", "most connections (`n`) from one address that have not made an authenticated request yet; beyond it that address's oldest one not being answered (idle, or silent for a second) is closed")
	c.maxConnsPerAgent = daemon.DefaultMaxConnsPerAgent
	fs.Var(intValue[int]{&c.maxConnsPerAgent}, "max-connections-per-agent", "most open connections (`n`) of one agent token (503 beyond)")
	c.operatorReserve = daemon.DefaultOperatorReserve
	fs.Var(intValue[int]{&c.operatorReserve}, "operator-reserved-connections", "connections (`n`) of --max-connections that agents can never take, kept for operators (0 for none)")
	fs.StringVar(&c.allowedHosts, "allowed-hosts", "", "extra names this server is reached by, a comma-separated `list`; other Host headers get 421 (DNS-rebinding guard)")
	fs.StringVar(&c.upstream, "upstream", "", "`url` of an OpenCode server (opencode serve) to stand in front of: its routes are forwarded, and OpenCode clients attached to questiond see its sessions and questions with questiond's (see docs/overlay.md); its password, if any, in OPENCODE_SERVER_PASSWORD")
	fs.Var(boolValue{&c.consoleFollow}, "console-follow", "after the operator answers a session's last question, move every attached OpenCode TUI to the next session with a pending question")
	fs.Var(boolValue{&c.insecure}, "insecure", "allow listening beyond loopback without operator and agent credentials (dangerous)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate `file` (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key `file` (PEM)")
	fs.StringVar(&c.agentTokenFile, "agent-token-file", "", "`file` of agent tokens, one name=token per line (# comments); adds to QUESTIOND_AGENT_TOKENS")
	c.maxPending = daemon.DefaultMaxPending
	fs.Var(intValue[int]{&c.maxPending}, "max-pending", "most pending questions (`n`) in total (429 beyond)")
	c.maxPendingPerAgent = daemon.DefaultMaxPendingPerAgent
	fs.Var(intValue[int]{&c.maxPendingPerAgent}, "max-pending-per-agent", "most pending questions (`n`) of one agent token (429 beyond)")
	c.maxStreams = daemon.DefaultMaxStreams
	fs.Var(intValue[int]{&c.maxStreams}, "max-streams", "most open operator event streams (`n`): /event, /global/event, the OpenCode TUI's (503 beyond); agents' MCP streams have --max-mcp-streams")
	c.maxMCPStreams = daemon.DefaultMaxMCPStreams
	fs.Var(intValue[int]{&c.maxMCPStreams}, "max-mcp-streams", "most open MCP event streams (`n`) on /mcp of all agents together (503 beyond)")
	c.maxMCPStreamsAgent = daemon.DefaultMaxMCPStreamsPerAgent
	fs.Var(intValue[int]{&c.maxMCPStreamsAgent}, "max-mcp-streams-per-agent", "most open MCP event streams (`n`) of one agent token (429 beyond); without agent tokens only --max-mcp-streams applies")
	c.maxMCPSessionAgent = daemon.DefaultMaxMCPSessionsPerAgent
	fs.Var(intValue[int]{&c.maxMCPSessionAgent}, "max-mcp-sessions-per-agent", "most live MCP sessions (`n`) of one agent token on /mcp (429 beyond); without agent tokens only --max-mcp-sessions applies; stateless (2026-07-28) requests hold no session")
	c.rateLimit = daemon.DefaultRequestsPerMinute
	fs.Var(intValue[int]{&c.rateLimit}, "rate-limit", "most requests (`n`) per minute from one client (an agent token, the operator, or else an IP on one kind of route: operators', agents' or other; health probes without credentials are not counted); 0 means no limit")
	fs.StringVar(&c.defaultCapability, "default-question-capability", string(daemon.DefaultCapability), "question capability, `user|none`, of sessions nobody set with PUT /sessions/{id}: user may ask the operator, none may ask nobody")
	c.maxSessions = daemon.DefaultMaxSessions
	fs.Var(intValue[int]{&c.maxSessions}, "max-sessions", "most session records (`n`) kept by PUT /sessions/{id} (429 beyond)")
	c.sessionsPerAgent = daemon.DefaultMaxSessionsPerAgent
	fs.Var(intValue[int]{&c.sessionsPerAgent}, "max-sessions-per-agent", "most session records (`n`) one agent token keeps by PUT /sessions/{id} (429 beyond); --max-sessions stays the total")
	c.maxMCPSessions = daemon.DefaultMaxMCPSessions
	fs.Var(intValue[int]{&c.maxMCPSessions}, "max-mcp-sessions", "most live MCP sessions (`n`) on /mcp (503 beyond); stateless (2026-07-28) requests hold no session")
	c.mcpIdleTimeout = daemon.DefaultMCPIdle
	fs.Var(durationValue{&c.mcpIdleTimeout}, "mcp-idle-timeout", "close an MCP session (/mcp) after this `duration` without requests; a tool call in progress keeps it open; stateless (2026-07-28) requests hold no session")
	fs.StringVar(&c.publicURL, "public-url", "", "`url` operators reach questiond at, for the link to its /ui page in notifications; by default http(s):// and the address questiond listens on, localhost for an unspecified host")
	fs.Var(boolValue{&c.notifyIncludeText}, "notify-include-text", "put the agent's message, the questions and the answers in webhook notifications (without it they name who asks where, not what)")
	c.notifyMaxAge = daemon.DefaultNotifyMaxAge
	fs.Var(durationValue{&c.notifyMaxAge}, "notify-max-age", fmt.Sprintf("give up on a webhook notification not delivered within this `duration` (retries back off from %s to %s)", daemon.DefaultNotifyMinBackoff, daemon.DefaultNotifyMaxBackoff))
	c.notifyQueue = daemon.DefaultNotifyQueueLength
	fs.Var(intValue[int]{&c.notifyQueue}, "notify-queue", "most notifications (`n`) waiting for one webhook; beyond it the oldest is dropped")
	c.notifyLease = daemon.DefaultOutboxLease
	fs.Var(durationValue{&c.notifyLease}, "notify-lease", "with --store postgres: how long a replica holds the webhook notifications it has not delivered without renewing its claim (every third of it); those of a replica that dies are delivered by another after about this `duration`")
	fs.Var(boolValue{&c.showVersion}, "version", "print the version and exit")

	// Errors are reported in one line by the caller; only --help prints the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var badValue error // the last flag value refused, with what is wanted
	fs.VisitAll(func(f *flag.Flag) { f.Value = reportingValue{f.Value, f.Name, &badValue} })
	if err := fs.Parse(args); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			printUsage(fs, out)
			return nil, err
		case badValue != nil:
			return nil, badValue
		default: // an unknown flag, or one missing its value
			return nil, fmt.Errorf("%s (see questiond --help)", flagError(err))
		}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: questiond takes only flags (see questiond --help)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "version" {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := f.Value.(reportingValue).Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", envName(f.Name), err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.metricsExplicit = set["metrics-addr"] || getenv(envName("metrics-addr")) != ""
	if err := c.readSecrets(getenv); err != nil {
		return nil, err
	}
	return c, c.check()
}

// printUsage writes --help: each flag with the kind of value it takes, its
// default (when it has one) and its environment variable.
func printUsage(fs *flag.FlagSet, out io.Writer) {
	fmt.Fprint(out, usageHeader)
	writeFlags(out, fs, nil, func(f *flag.Flag) []string {
		if f.Name == "version" { // an action, not a setting: no default, no twin
			return nil
		}
		return append(defaultNote(f), "env "+envName(f.Name))
	})
	fmt.Fprint(out, secretsHelp)
}

// reportingValue keeps the error of a refused flag value, naming the flag,
// so parseConfig can return it alone instead of the flag package's
// "invalid value … for flag -x" and the whole usage.
type reportingValue struct {
	flag.Value
	name string
	err  *error
}

func (v reportingValue) Set(s string) error {
	err := v.Value.Set(s)
	if err != nil {
		*v.err = fmt.Errorf("--%s: %w", v.name, err)
	}
	return err
}

func (v reportingValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
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
  QUESTIOND_DATABASE_URL        the PostgreSQL database of --store postgres, a libpq URL
                                (postgres://user:password@host:5432/questiond)
Without credentials questiond serves loopback addresses only; a container, which
listens on 0.0.0.0, gets them with docker run -e QUESTIOND_OPERATOR_PASSWORD -e QUESTIOND_AGENT_TOKENS …
`

// readSecrets reads the operator's credentials and the agents' tokens from
// the environment and the token file.
func (c *config) readSecrets(getenv func(string) string) error {
	c.operatorPassword = firstOf(getenv, "QUESTIOND_OPERATOR_PASSWORD", "OPENCODE_SERVER_PASSWORD")
	c.operatorUsername = firstOf(getenv, "QUESTIOND_OPERATOR_USERNAME", "OPENCODE_SERVER_USERNAME")
	c.upstreamPassword, c.upstreamUsername = getenv("OPENCODE_SERVER_PASSWORD"), getenv("OPENCODE_SERVER_USERNAME")
	c.notifySecret = getenv("QUESTIOND_NOTIFY_SECRET")
	c.databaseURL = getenv("QUESTIOND_DATABASE_URL")
	if c.notifySecret != "" && len(c.notifySecret) < 16 {
		return errors.New("QUESTIOND_NOTIFY_SECRET must be at least 16 characters")
	}
	c.notifyURLs = c.splitList(getenv("QUESTIOND_NOTIFY_URLS"))
	for i, u := range c.notifyURLs {
		if err := daemon.CheckWebhookURL(u); err != nil {
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
	if _, port, err := net.SplitHostPort(c.addr); err != nil || !validPort(port) {
		return fmt.Errorf("--addr: want host:port, like 127.0.0.1:4097 (or :4097 for every interface), got %q", c.addr)
	}
	if err := c.checkMetricsAddr(); err != nil {
		return err
	}
	if c.upstream != "" {
		if err := daemon.CheckUpstreamURL(c.upstream); err != nil {
			return fmt.Errorf("--upstream: %w", err)
		}
	}
	positive := map[string]time.Duration{
		"heartbeat": c.heartbeat, "default-timeout": c.defaultTimeout, "max-timeout": c.maxTimeout,
		"max-wait": c.maxWait, "keepalive": c.keepAlive, "retention": c.retention, "reconnect-grace": c.reconnectGrace,
		"event-write-timeout": c.eventWriteTimeout, "shutdown-timeout": c.shutdownTimeout,
		"notify-max-age": c.notifyMaxAge, "notify-lease": c.notifyLease,
		"body-read-timeout": c.bodyReadTimeout,
	}
	for name, d := range positive {
		if d <= 0 {
			return fmt.Errorf("--%s must be positive, got %s", name, d)
		}
	}
	counts := map[string]int64{
		"max-body": c.maxBody, "max-properties": int64(c.maxProperties), "max-options": int64(c.maxOptions), "header-limit": int64(c.headerLimit),
		"event-queue": int64(c.eventQueue), "event-queue-bytes": int64(c.eventQueueBytes), "max-directories": int64(c.maxDirectories),
		"max-retained": int64(c.maxRetained), "notify-queue": int64(c.notifyQueue),
		"max-connections": int64(c.maxConns), "max-connections-per-address": int64(c.maxConnsPerAddr), "max-connections-per-agent": int64(c.maxConnsPerAgent),
	}
	for name, n := range counts {
		if n <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", name, n)
		}
	}
	if c.operatorReserve < 0 || c.operatorReserve >= c.maxConns {
		return fmt.Errorf("--operator-reserved-connections must be at least 0 and less than --max-connections (%d), got %d", c.maxConns, c.operatorReserve)
	}
	if c.maxRetainedAgent <= 0 || c.keyRetention <= 0 || c.maxBytes <= 0 || c.maxBytesAgent <= 0 {
		return errors.New("--max-retained-per-agent, --key-retention, --max-bytes and --max-bytes-per-agent must be positive")
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
	if c.sessionsPerAgent <= 0 {
		return errors.New("--max-sessions-per-agent must be positive")
	}
	if c.maxSessions <= 0 || c.maxMCPSessions <= 0 || c.mcpIdleTimeout <= 0 {
		return errors.New("--max-sessions, --max-mcp-sessions and --mcp-idle-timeout must be positive")
	}
	if c.maxMCPStreams <= 0 || c.maxMCPStreamsAgent <= 0 || c.maxMCPSessionAgent <= 0 {
		return errors.New("--max-mcp-streams, --max-mcp-streams-per-agent and --max-mcp-sessions-per-agent must be positive")
	}
	if c.headerLimit < 4 {
		return fmt.Errorf("--header-limit must be at least 4 runes, got %d", c.headerLimit)
	}
	if c.publicURL != "" {
		if err := daemon.CheckWebhookURL(c.publicURL); err != nil {
			return fmt.Errorf("--public-url %q: %w", c.publicURL, err)
		}
	}
	switch c.store {
	case "bolt", "memory", "postgres":
	default:
		return fmt.Errorf("--store must be bolt, memory or postgres, got %q", c.store)
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

// port is the port of --addr.
func (c *config) port() string {
	_, port, _ := net.SplitHostPort(c.addr)
	return port
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
		var missing, set []string
		if c.operatorPassword == "" {
			missing, set = append(missing, "QUESTIOND_OPERATOR_PASSWORD"), append(set, "QUESTIOND_OPERATOR_PASSWORD")
		}
		if len(c.agentTokens) == 0 {
			missing = append(missing, "QUESTIOND_AGENT_TOKENS")
			set = append(set, "QUESTIOND_AGENT_TOKENS=name=token (16+ characters; or --agent-token-file)")
		}
		// In a container 0.0.0.0 is the only address that can be reached, so
		// the way out there is the credentials, passed with docker run -e.
		return "", fmt.Errorf("refusing to listen on %s without credentials: anyone who reaches it could answer or ask questions. "+
			"Set %s; in a container: docker run -e %s … (-e NAME passes your shell's value); or listen on 127.0.0.1:%s (this machine only); or pass --insecure",
			c.addr, strings.Join(set, " and "), strings.Join(missing, " -e "), c.port())
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

// validPort reports whether port is a TCP port number (0 picks a free one).
func validPort(port string) bool {
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n <= 65535
}
