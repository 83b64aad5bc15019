// Command questiond is the daemon: it lets AI agents ask a human structured
// questions over HTTP (MCP elicitation) and lets operators answer them with
// OpenCode clients. Run `questiond --help` for every setting; `questiond ask`
// asks a question from a script (`questiond ask --help`).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	apidoc "github.com/questiond/questiond/api"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
	"github.com/questiond/questiond/internal/sse"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "ask" {
		status := ask(ctx, os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(status)
	}
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintln(os.Stderr, "questiond:", err)
		os.Exit(1)
	}
}

// run is the whole daemon: it serves until ctx ends, then shuts down
// gracefully. ready, if not nil, receives the bound address once the daemon
// accepts connections.
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
	var tlsCert tls.Certificate
	if cfg.tlsCert != "" {
		if tlsCert, err = tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey); err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if exposureWarning != "" {
		log.Warn(exposureWarning)
	}

	bus, err := sse.New(sse.Options{
		Heartbeat:    cfg.heartbeat,
		WriteTimeout: cfg.eventWriteTimeout,
		QueueLength:  cfg.eventQueue,
		MaxScopes:    cfg.maxDirectories,
		Logger:       log,
	})
	if err != nil {
		return fmt.Errorf("starting the event broker: %w", err)
	}
	events := httpapi.NewEvents(bus, log)
	store, journal, err := openStore(ctx, cfg, getenv, events, log)
	if err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		return errors.Join(err, bus.Close(closeCtx))
	}
	sessions, err := openSessions(ctx, cfg, journal)
	if err != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		return errors.Join(err, bus.Close(closeCtx), store.Close(closeCtx), closeJournal(journal))
	}
	var ln net.Listener
	api, err := httpapi.New(store, events, httpapi.Options{
		Sessions:       sessions,
		MCPIdleTimeout: cfg.mcpIdleTimeout,
		Logger:         log,
		Version:        version,
		Elicit:         elicit.Options{MaxProperties: cfg.maxProperties, HeaderLimit: cfg.headerLimit},
		DefaultTimeout: cfg.defaultTimeout,
		MaxTimeout:     cfg.maxTimeout,
		MaxWait:        cfg.maxWait,
		KeepAlive:      cfg.keepAlive,
		ReconnectGrace: cfg.reconnectGrace,
		MaxBodyBytes:   cfg.maxBody,
		CORSOrigins:    cfg.corsOrigins(),
		OpenAPI:        apidoc.JSON(),
		Auth: httpapi.Auth{
			OperatorUsername: cfg.operatorUsername,
			OperatorPassword: cfg.operatorPassword,
			AgentTokens:      cfg.agentTokens,
		},
		ListenAddr:   cfg.addr,
		AllowedHosts: cfg.splitList(cfg.allowedHosts),
		Limits: httpapi.Limits{
			MaxPending:         cfg.maxPending,
			MaxPendingPerAgent: cfg.maxPendingPerAgent,
			MaxStreams:         cfg.maxStreams,
			MaxMCPSessions:     cfg.maxMCPSessions,
			RequestsPerMinute:  cfg.rateLimit,
		},
	})
	if err == nil {
		ln, err = net.Listen("tcp", cfg.addr)
		if err != nil {
			err = fmt.Errorf("listening on %s: %w", cfg.addr, err)
		}
	}
	if err != nil {
		// Nothing was served yet: just stop what has been started.
		ctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
		defer cancel()
		return errors.Join(err, bus.Close(ctx), store.Close(ctx), closeJournal(journal))
	}
	silent := httpapi.NewSilentConns()
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: event streams and long-polls stay open for minutes;
		// each of them bounds its own writes.
		ErrorLog:  zap.NewStdLog(log.Named("http")),
		ConnState: silent.Track,
	}
	scheme := "http"
	if cfg.tlsCert != "" {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{tlsCert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("questiond listening", zap.String("addr", ln.Addr().String()), zap.String("scheme", scheme),
		zap.String("version", version), zap.Bool("operatorAuth", cfg.operatorPassword != ""),
		zap.Int("agentTokens", len(cfg.agentTokens)))
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	return shutdown(log, cfg.shutdownTimeout, srv, silent, api, store, journal, bus)
}

// openStore opens the pending store --store asks for. With the durable store
// it returns the journal too, which the caller closes after the store.
func openStore(ctx context.Context, cfg *config, getenv func(string) string, events *httpapi.Events, log *zap.Logger) (*pending.Memory, *pending.Bolt, error) {
	opts := pending.MemoryOptions{Retention: cfg.retention, OnEnd: events.Ended, Logger: log}
	if cfg.store == "memory" {
		log.Warn("questions are kept in memory only: a restart loses every pending question (--store bolt keeps them)")
		return pending.NewMemory(opts), nil, nil
	}
	path, err := cfg.databasePath(getenv)
	if err != nil {
		return nil, nil, err
	}
	journal, err := pending.OpenBolt(path, pending.BoltOptions{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("opening the question store: %w", err)
	}
	opts.Journal = journal
	store, err := pending.Open(ctx, opts)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("restoring questions from %s: %w", path, err), journal.Close())
	}
	log.Info("question store opened", zap.String("path", path))
	return store, journal, nil
}

// openSessions opens the session registry, in the question database when
// there is one: a session set to "none" must stay "none" across restarts.
func openSessions(ctx context.Context, cfg *config, journal *pending.Bolt) (*session.Registry, error) {
	opts := session.Options{Default: session.Capability(cfg.defaultCapability), MaxSessions: cfg.maxSessions}
	if journal != nil {
		table, err := journal.Table("sessions")
		if err != nil {
			return nil, err
		}
		opts.Journal = table
	}
	registry, err := session.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("opening the session registry: %w", err)
	}
	return registry, nil
}

func closeJournal(j *pending.Bolt) error {
	if j == nil {
		return nil
	}
	return j.Close()
}

// shutdown stops the daemon within timeout: refuse new questions; with the
// memory store, end every pending one as cancel (it cannot keep them) so
// agents get an answer and operators see question.rejected; with the durable
// store, leave them pending for the next start and let waiting agents go;
// close the event streams, then let in-flight requests finish.
func shutdown(log *zap.Logger, timeout time.Duration, srv *http.Server, silent *httpapi.SilentConns, api *httpapi.Server, store *pending.Memory, journal *pending.Bolt, bus *sse.Broker) error {
	log.Info("shutting down", zap.Duration("timeout", timeout))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	api.Drain()
	endAll := func() {
		if journal != nil {
			return // the durable store keeps pending questions across restarts
		}
		ended, err := store.SettleAll(ctx, pending.Outcome{
			Ending: pending.EndShutdown,
			Result: pending.Result{Action: pending.ActionCancel},
		})
		if err != nil {
			log.Warn("could not end pending questions", zap.Error(err))
		} else if len(ended) > 0 {
			log.Info("ended pending questions as cancel", zap.Int("count", len(ended)))
		}
	}
	endAll()
	var errs []error
	if err := bus.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing event streams: %w", err))
	}
	api.Release()
	silent.CloseAll()
	if err := srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the HTTP server: %w", err))
		_ = srv.Close()
	}
	endAll() // anything created by a request that was already past the door
	if err := store.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing the store: %w", err))
	}
	if err := closeJournal(journal); err != nil {
		errs = append(errs, fmt.Errorf("closing the question database: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// newLogger builds the one logger of the process: console lines on a
// terminal, JSON otherwise (or as --log-format says).
func newLogger(cfg *config, out io.Writer) (*zap.Logger, error) {
	var level zapcore.Level
	if err := level.UnmarshalText([]byte(cfg.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	format := cfg.logFormat
	if format == "auto" {
		format = "json"
		if f, ok := out.(*os.File); ok {
			if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
				format = "console"
			}
		}
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	encCfg.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	if format == "console" {
		encCfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(out)), level)
	return zap.New(core), nil
}
