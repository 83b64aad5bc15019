// Command questiond is the daemon: it lets AI agents ask a human structured
// questions over HTTP (MCP elicitation) and lets operators answer them with
// OpenCode clients. Run `questiond --help` for every setting; `questiond ask`
// asks a question from a script (`questiond ask --help`); `questiond bridge`
// runs any MCP server for a host and answers its elicitations through
// questiond (`questiond bridge --help`); `questiond health`
// probes the daemon for a container's health check; `questiond migrate`
// copies a bbolt database into PostgreSQL.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	apidoc "github.com/questiond/questiond/api"
	"github.com/questiond/questiond/internal/daemon"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ask" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		status := ask(ctx, os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(status)
	}
	if len(os.Args) > 1 && os.Args[1] == "health" {
		os.Exit(health(context.Background(), os.Args[2:], os.Getenv, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "bridge" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		status := bridgeCommand(ctx, os.Args[2:], os.Getenv, os.Environ(), os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(status)
	}
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		status := migrateCommand(ctx, os.Args[2:], os.Getenv, os.Stdout, os.Stderr)
		stop()
		os.Exit(status)
	}
	err := run(stopOnSignals(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "questiond:", err)
		os.Exit(1)
	}
}

// stopOnSignals returns a context that ends on the first SIGINT or SIGTERM,
// which starts a graceful shutdown. A second one during the shutdown exits
// at once with status 128+signal, as a shell reports a process killed by it.
func stopOnSignals() context.Context {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		first := <-signals
		cancel(fmt.Errorf("received %v", first))
		second := <-signals
		fmt.Fprintf(os.Stderr, "questiond: %v during the graceful shutdown: exiting at once\n", second)
		status := 1
		if n, ok := second.(syscall.Signal); ok {
			status = 128 + int(n)
		}
		os.Exit(status)
	}()
	return ctx
}

// run is the whole daemon: it serves until ctx ends, then shuts down
// gracefully within --shutdown-timeout. ready, if not nil, receives the
// bound address once the daemon accepts connections.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.showVersion {
		fmt.Fprintln(stdout, "questiond", version)
		return nil
	}
	exposureWarning, err := cfg.checkExposure()
	if err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if cfg.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if exposureWarning != "" {
		log.Warn(exposureWarning)
	}
	dcfg, err := daemonConfig(cfg, getenv, log)
	if err != nil {
		return err
	}
	dcfg.TLS = tlsConfig
	metricsLn, metricsWarning, err := cfg.listenMetrics(cfg.metricsExplicit)
	if err != nil {
		return err
	}
	if metricsWarning != "" {
		log.Warn(metricsWarning)
	}
	dcfg.Metrics = metricsLn
	d, err := daemon.New(ctx, dcfg)
	if err != nil {
		return err
	}
	if dcfg.BoltPath == "" && dcfg.DatabaseURL == "" {
		log.Warn("questions are kept in memory only: a restart loses every pending question (--store bolt keeps them)")
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve() }()
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	log.Info("questiond listening", zap.String("addr", d.Addr().String()), zap.String("scheme", scheme),
		zap.String("version", version), zap.Bool("operatorAuth", cfg.operatorPassword != ""),
		zap.Int("agentTokens", len(cfg.agentTokens)), zap.Int("webhooks", len(cfg.notifyURLs)),
		zap.Bool("webhooksSigned", cfg.notifySecret != ""), metricsField(metricsLn))
	// The line above is what tools wait for; this one is for a person.
	page := daemon.PageURL(cfg.publicURL, d.Addr(), tlsConfig != nil)
	log.Info("open "+page+" to answer questions", zap.String("url", page))
	if ready != nil {
		ready <- d.Addr().String()
	}

	select {
	case err := <-served:
		return err // serving failed, and Serve has closed everything
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	err = d.Shutdown(stopCtx)
	return errors.Join(err, <-served)
}

// daemonConfig turns the settings into the daemon's configuration.
func daemonConfig(cfg *config, getenv func(string) string, log *zap.Logger) (daemon.Config, error) {
	dcfg := daemon.Config{
		Addr:     cfg.addr,
		Logger:   log,
		Events:   daemon.EventOptions{Heartbeat: cfg.heartbeat, WriteTimeout: cfg.eventWriteTimeout, QueueLength: cfg.eventQueue, QueueBytes: cfg.eventQueueBytes, MaxScopes: cfg.maxDirectories},
		Store:    daemon.StoreOptions{Retention: cfg.retention, MaxRetained: cfg.maxRetained},
		Sessions: daemon.SessionOptions{Default: daemon.Capability(cfg.defaultCapability), MaxSessions: cfg.maxSessions, MaxSessionsPerAgent: cfg.sessionsPerAgent, ClaimHold: cfg.maxTimeout + cfg.retention},
		API: daemon.APIOptions{
			MCPIdleTimeout: cfg.mcpIdleTimeout,
			Version:        version,
			Elicit:         daemon.SchemaOptions{MaxProperties: cfg.maxProperties, MaxOptions: cfg.maxOptions, HeaderLimit: cfg.headerLimit},
			DefaultTimeout: cfg.defaultTimeout,
			MaxTimeout:     cfg.maxTimeout,
			MaxWait:        cfg.maxWait,
			KeepAlive:      cfg.keepAlive,
			ReconnectGrace: cfg.reconnectGrace,
			MaxBodyBytes:   cfg.maxBody,
			CORSOrigins:    cfg.corsOrigins(),
			OpenAPI:        apidoc.JSON(),
			Auth: daemon.APIAuth{
				OperatorUsername: cfg.operatorUsername,
				OperatorPassword: cfg.operatorPassword,
				AgentTokens:      cfg.agentTokens,
				UpstreamUsername: cfg.upstreamUsername,
				UpstreamPassword: cfg.upstreamPassword,
			},

			ListenAddr:    cfg.addr,
			AllowedHosts:  cfg.splitList(cfg.allowedHosts),
			ConsoleFollow: cfg.consoleFollow,
			Limits: daemon.APILimits{
				MaxPending:         cfg.maxPending,
				MaxPendingPerAgent: cfg.maxPendingPerAgent,
				MaxStreams:         cfg.maxStreams,
				MaxMCPSessions:     cfg.maxMCPSessions,
				RequestsPerMinute:  cfg.rateLimit,

				MaxMCPStreams:          cfg.maxMCPStreams,
				MaxMCPStreamsPerAgent:  cfg.maxMCPStreamsAgent,
				MaxMCPSessionsPerAgent: cfg.maxMCPSessionAgent,
			},
		},
		Upstream:       daemon.UpstreamOptions{URL: cfg.upstream, Username: cfg.upstreamUsername, Password: cfg.upstreamPassword},
		FailureTimeout: cfg.shutdownTimeout,
		PublicURL:      cfg.publicURL,
		Notify: daemon.NotifyOptions{
			URLs:        cfg.notifyURLs,
			Secret:      []byte(cfg.notifySecret),
			IncludeText: cfg.notifyIncludeText,
			MaxAge:      cfg.notifyMaxAge,
			QueueLength: cfg.notifyQueue,
		},
	}
	dcfg.Conns = daemon.ConnOptions{
		BodyReadTimeout:  cfg.bodyReadTimeout,
		MaxConns:         cfg.maxConns,
		MaxConnsPerAddr:  cfg.maxConnsPerAddr,
		MaxConnsPerAgent: cfg.maxConnsPerAgent,
		OperatorReserve:  cfg.operatorReserve,
	}
	if cfg.operatorReserve == 0 {
		dcfg.Conns.OperatorReserve = -1 // none: connguard's zero is its default
	}
	// Retention and byte budgets per agent (issue 22).
	dcfg.Store.MaxRetainedPerAgent, dcfg.Store.KeyRetention = cfg.maxRetainedAgent, cfg.keyRetention
	dcfg.Store.MaxBytes, dcfg.Store.MaxBytesPerAgent = cfg.maxBytes, cfg.maxBytesAgent
	switch cfg.store {
	case "postgres":
		if cfg.databaseURL == "" {
			return daemon.Config{}, errors.New("--store postgres needs QUESTIOND_DATABASE_URL, the database's libpq URL (environment only: it may hold a password)")
		}
		dcfg.DatabaseURL = cfg.databaseURL
		dcfg.Postgres.OutboxLease = cfg.notifyLease
		return dcfg, nil
	case "bolt":
		path, err := cfg.databasePath(getenv)
		if err != nil {
			return daemon.Config{}, err
		}
		dcfg.BoltPath = path
	}
	return dcfg, nil
}

// newLogger builds the one logger of the process: console lines on a
// terminal, JSON otherwise (or as --log-format says). Console lines are
// coloured only on a terminal: in a file or a pipe the colour codes would
// be noise.
func newLogger(cfg *config, out io.Writer) (*zap.Logger, error) {
	var level zapcore.Level
	if err := level.UnmarshalText([]byte(cfg.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	terminal := isTerminal(out)
	format := cfg.logFormat
	if format == "auto" {
		format = "json"
		if terminal {
			format = "console"
		}
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	encCfg.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	if format == "console" {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		if terminal {
			encCfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(out)), level)
	return zap.New(core), nil
}

// isTerminal reports whether out is a terminal (a character device).
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
