package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/bridge"
)

// Exit statuses of `questiond bridge`.
const (
	bridgeEnded         = 0 // the host closed its side
	bridgeFailed        = 1 // the upstream ended, or could not be started
	bridgeUsage         = 2
	defaultBridgeGiveUp = 30 * time.Second
)

const bridgeUsageHeader = `questiond bridge runs an MCP server for a host (OpenCode, Claude Code, any
MCP client) and answers the server's elicitations through questiond: a human
answers them in the OpenCode TUI, the /ui page or any OpenCode client.

Usage:
  questiond bridge [flags] -- COMMAND [ARGS...]
  questiond bridge [flags] --url URL [--header K=V]...

The host launches the bridge as its local (stdio) MCP server, and the bridge
runs COMMAND, the real server, as its own child over stdio, or reaches the
server at URL over Streamable HTTP, sending each --header with every
request (the server's own credentials; never questiond's). Every message
passes through unchanged, except the server's elicitation/create requests,
which are asked in questiond (once, even across dropped connections) and
answered with the operator's accept, decline or cancel. The host sees the
server's own name, tools and instructions. COMMAND runs without questiond's
variables (QUESTIOND_*) in its environment.

In OpenCode (opencode.json):
  "mcp": {"deploy": {"type": "local",
    "command": ["questiond", "bridge", "--name", "deploy", "--", "deploy-mcp-server"]}}

Exit status: 0 when the host closes the connection; 1 when the server exits,
cannot be started or answers with an HTTP error (its questions are withdrawn
first); 2 for bad flags.

Flags:
`

// bridgeHelpOrder lists the flags in the order --help explains them.
var bridgeHelpOrder = []string{"url", "header", "name", "server", "token", "directory", "timeout", "give-up", "keep-alive", "prefer-host"}

type bridgeFlags struct {
	name, server, token, directory string
	timeout, giveUp, keepAlive     time.Duration
	preferHost                     bool
	command                        []string // the server to run, or
	url                            string   // the server to reach
	header                         http.Header
}

// bridgeCommand is `questiond bridge`: it returns the process's exit status.
// The host speaks MCP on stdin and stdout; stderr is the bridge's log and
// the server's own stderr.
func bridgeCommand(ctx context.Context, args []string, getenv func(string) string, environ []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) int {
	f, err := parseBridge(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return bridgeEnded
	}
	if err != nil {
		fmt.Fprintln(stderr, "questiond bridge:", err)
		fmt.Fprintln(stderr, "Run 'questiond bridge --help' for the flags.")
		return bridgeUsage
	}
	log := newBridgeLogger(stderr)
	defer func() { _ = log.Sync() }()
	asker, err := client.New(client.Options{Server: f.server, Token: f.token, GiveUpUnreached: f.giveUp,
		OnRetry: func(err error, delay time.Duration) {
			log.Warn("questiond is not answering; trying again", zap.String("server", f.server), zap.Duration("in", delay), zap.Error(err))
		}})
	if err != nil {
		fmt.Fprintln(stderr, "questiond bridge:", err)
		return bridgeUsage
	}
	var transport mcp.Transport
	var cmd *exec.Cmd
	if f.url != "" {
		transport = &bridge.StreamableHTTP{URL: f.url, Header: f.header, Logger: log}
	} else {
		cmd = bridge.Command(f.command[0], f.command[1:], environ)
		cmd.Stderr = stderr
		transport = &bridge.CommandTransport{Command: cmd}
	}
	upstream, err := transport.Connect(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "questiond bridge: starting %s: %v\n", f.upstream(), err)
		return bridgeFailed
	}
	host, err := (&bridge.StdioTransport{Reader: stdin, Writer: stdout}).Connect(ctx)
	if err != nil {
		_ = upstream.Close()
		fmt.Fprintln(stderr, "questiond bridge:", err)
		return bridgeFailed
	}
	dir, _ := os.Getwd()
	err = bridge.New(host, upstream, bridge.Options{
		Asker: asker, Server: f.server, Name: f.name, Logger: log, PreferHost: f.preferHost, ProgressInterval: f.keepAlive,
		SessionID: bridge.SessionID(f.name, dir), Directory: f.directory, Timeout: f.timeout,
	}).Run(ctx)
	switch {
	case err == nil:
		return bridgeEnded
	case errors.Is(err, bridge.ErrUpstreamEnded):
		status := "it exited"
		if cmd != nil && cmd.ProcessState != nil {
			status = "it exited with " + cmd.ProcessState.String()
		}
		fmt.Fprintf(stderr, "questiond bridge: the MCP server %s ended (%s); its questions were withdrawn\n", f.upstream(), status)
	default:
		fmt.Fprintln(stderr, "questiond bridge:", err)
	}
	return bridgeFailed
}

func parseBridge(args []string, getenv func(string) string, stderr io.Writer) (*bridgeFlags, error) {
	f := &bridgeFlags{}
	fs := flag.NewFlagSet("questiond bridge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.name, "name", "", "`name` operators know this server by: use the host's config key for it (default: COMMAND's file name, or the --url's host name)")
	fs.StringVar(&f.server, "server", "", "questiond's base `URL` (default \""+client.DefaultServer+"\", env QUESTIOND_SERVER)")
	fs.StringVar(&f.token, "token", "", "agent bearer `token` (env QUESTIOND_TOKEN; prefer the environment, flags show in the process list)")
	fs.StringVar(&f.directory, "directory", "", "project `directory` the questions belong to (default: none, every operator sees them)")
	fs.DurationVar(&f.timeout, "timeout", 0, "how long the operator has for each question, a Go `duration`; then the server gets cancel (default: the daemon's --default-timeout)")
	fs.DurationVar(&f.giveUp, "give-up", defaultBridgeGiveUp, "how long to keep trying a questiond never reached before the server's elicitation fails with an error naming it, a Go `duration`")
	fs.DurationVar(&f.keepAlive, "keep-alive", bridge.DefaultProgressInterval, "how often the host hears progress on a tool call while its question waits for the operator, a Go `duration`: shorter than the host's tool-call timeout (OpenCode's is 60s)")
	fs.BoolVar(&f.preferHost, "prefer-host", false, "let a host that declares elicitation itself answer the server's elicitations")
	fs.StringVar(&f.url, "url", "", "reach the MCP server at this http(s) `URL` over Streamable HTTP, instead of running a COMMAND")
	f.header = http.Header{}
	fs.Var(headerValues{f.header}, "header", "an HTTP header for every request to the --url server, as `K=V`, e.g. Authorization=\"Bearer …\" (repeatable; the server's own credentials: questiond's token never goes there)")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, bridgeUsageHeader)
			writeFlags(stderr, fs, bridgeHelpOrder, func(fl *flag.Flag) []string {
				if fl.DefValue == "0s" {
					return nil // the usage says what none means
				}
				return defaultNote(fl)
			})
			return nil, err
		}
		return nil, &usageError{flagError(err)}
	}
	f.command = fs.Args()
	switch {
	case f.url != "" && len(f.command) > 0:
		return nil, usagef("both --url and a COMMAND after --: give one server, reached over HTTP or run as a child")
	case f.url == "" && len(f.command) == 0:
		return nil, usagef("no server to run: give its command after --, e.g. questiond bridge --name deploy -- deploy-mcp-server, or its --url")
	case f.url == "" && len(f.header) > 0:
		return nil, usagef("--header is for a server reached with --url; a COMMAND gets its settings from its own flags and environment")
	case f.url != "":
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--url %q is not an http or https URL", f.url)
		}
		if f.name == "" {
			f.name = u.Hostname()
		}
	case f.name == "":
		f.name = filepath.Base(f.command[0])
	}
	var err error
	if f.server, f.token, err = agentCredentials(f.server, f.token, getenv); err != nil {
		return nil, err
	}
	if f.timeout < 0 || f.giveUp < 0 || f.keepAlive < 0 {
		return nil, usagef("--timeout, --give-up and --keep-alive must be positive")
	}
	return f, nil
}

// upstream names the server for messages.
func (f *bridgeFlags) upstream() string {
	if f.url != "" {
		if u, err := url.Parse(f.url); err == nil {
			return u.Redacted()
		}
	}
	return f.command[0]
}

// headerValues is the repeatable --header K=V.
type headerValues struct{ h http.Header }

func (v headerValues) String() string { return "" }

func (v headerValues) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("%q is not K=V; want a header like Authorization=\"Bearer …\"", s)
	}
	for _, r := range k {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return fmt.Errorf("%q is not an HTTP header name", k)
		}
	}
	for _, r := range val {
		if (r < ' ' && r != '\t') || r == 0x7f {
			return fmt.Errorf("the value of header %s holds a control character (a line break?)", k)
		}
	}
	v.h.Add(k, strings.TrimSpace(val))
	return nil
}

// newBridgeLogger logs console lines to stderr, which hosts keep as the
// server's log: stdout is the host's MCP connection and carries nothing
// else.
func newBridgeLogger(stderr io.Writer) *zap.Logger {
	log, err := newLogger(&config{logLevel: "info", logFormat: "console"}, stderr)
	if err != nil {
		return zap.NewNop() // the level and format above are valid
	}
	return log
}
