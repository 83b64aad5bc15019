// Package daemon assembles a whole questiond (event broker, question store,
// session registry, webhook notifier, HTTP API and server) and shuts it down
// in the one order that loses no answer and no event; cmd/questiond and the
// test server both run it.
package daemon

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/metrics"
	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/overlay"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
	"github.com/questiond/questiond/internal/session"
	"github.com/questiond/questiond/internal/sse"
)

// Defaults for Config.
const (
	// DefaultStreamGrace is how long Shutdown lets event streams write their
	// last frames: a healthy client takes milliseconds. It is the broker's own
	// grace per stream, so the two bounds are one number.
	DefaultStreamGrace = sse.DefaultCloseGrace
	// DefaultFailureTimeout bounds the shutdown Serve runs when serving fails.
	DefaultFailureTimeout = 10 * time.Second
)

// Config says how to assemble a daemon. The zero value is a memory store on
// 127.0.0.1:0 with every part at its defaults, logging nowhere.
type Config struct {
	// API configures the HTTP API. Its Logger is Logger; when its Sessions
	// is nil, the daemon opens a registry with Sessions.
	API httpapi.Options
	// Upstream, when its URL is set, is the OpenCode server questiond
	// stands in front of (API.Upstream, built by the daemon; its Logger is
	// Logger).
	Upstream overlay.Options
	// Events configures the event broker; its Logger is Logger.
	Events sse.Options
	// Store configures the question store; its OnEnd, Logger and Journal
	// are the daemon's.
	Store pending.Options
	// BoltPath, if set, makes the store durable: a bbolt file the daemon
	// opens with Bolt (whose Logger is Logger), keeps session records in as
	// well, and closes last.
	BoltPath string
	Bolt     pending.BoltOptions
	// Journal, if set, makes the store durable through a journal the caller
	// owns and closes after Shutdown. It excludes BoltPath.
	Journal pending.Journal
	// DatabaseURL, if set, keeps questions and session records in the
	// PostgreSQL database it names (a libpq URL), shared with every other
	// replica on it: see postgres.go. It excludes BoltPath and Journal.
	DatabaseURL string
	Postgres    pgstore.Options
	// Sessions configures the registry the daemon opens when API.Sessions
	// is nil; its Journal is the BoltPath file when there is one.
	Sessions session.Options
	// Addr is where to listen; "" means 127.0.0.1:0. Listener, if set, is
	// served instead, and the daemon closes it.
	Addr     string
	Listener net.Listener
	// TLS, if set, serves HTTPS.
	TLS *tls.Config
	// Notify configures the webhooks told of every question and ending. Its
	// Logger is Logger; its Outbox is the BoltPath file when there is one,
	// the database (shared under leases, see Postgres.OutboxLease) with
	// DatabaseURL; its Link, when empty, is PublicURL's /ui page.
	Notify notify.Options
	// PublicURL is where operators reach questiond, for links; "" means
	// the listener's address (localhost for an unspecified one).
	PublicURL string
	// Metrics, if set, is a listener the daemon serves GET /metrics on
	// (Prometheus), and closes. Without it nothing is measured.
	Metrics net.Listener
	// Wrap, if set, puts a handler in front of the API (fault injection,
	// counting).
	Wrap func(http.Handler) http.Handler
	// WrapStore, if set, puts a store in front of the one the question
	// service uses (fault injection); Shutdown still works on the daemon's
	// own store.
	WrapStore func(ask.QuestionStore) ask.QuestionStore
	// Logger gets every part's logs; nil means zap.NewNop().
	Logger *zap.Logger
	// StreamGrace bounds how long Shutdown waits for event streams to write
	// their last frames; zero means DefaultStreamGrace.
	StreamGrace time.Duration
	// FailureTimeout bounds the shutdown Serve runs itself when serving
	// fails; zero means DefaultFailureTimeout.
	FailureTimeout time.Duration
	// Conns bounds request bodies' read time and open connections; its
	// Logger is Logger and its TLS follows TLS.
	Conns connguard.Options
}

// Daemon is an assembled questiond: New opens every part and listens, Serve
// serves, Shutdown stops it. Its parts are there to read, not to close.
type Daemon struct {
	log            *zap.Logger
	streamGrace    time.Duration
	failureTimeout time.Duration

	bus       *sse.Broker
	store     *pending.Store
	journal   *pending.Bolt // opened from Config.BoltPath; nil otherwise
	pg        *postgres     // opened from Config.DatabaseURL; nil otherwise
	notify    *notify.Notifier
	durable   bool         // pending questions outlive Shutdown
	questions *ask.Service // every question's life, below the protocols
	api       *httpapi.Server
	http      *http.Server
	conns     *connguard.Guard
	ln        net.Listener

	upstream  *overlay.Upstream  // Config.Upstream's server; nil without one
	stopWatch context.CancelFunc // ends upstream.Watch, which Serve started
	watched   chan struct{}      // closed when upstream.Watch has returned

	metrics     *metrics.Metrics // nil without Config.Metrics
	metricsHTTP *http.Server
	metricsLn   net.Listener

	mu       sync.Mutex
	serving  bool // Serve has taken the listener
	stopping bool // Shutdown has begun

	stopOnce sync.Once
	stopErr  error
}

// New opens every part of a daemon and binds its listener; nothing is served
// until Serve. On an error everything opened so far is closed again.
func New(ctx context.Context, cfg Config) (*Daemon, error) {
	if cfg.BoltPath != "" && cfg.Journal != nil {
		return nil, errors.New("daemon: both BoltPath and Journal are set")
	}
	if cfg.DatabaseURL != "" && (cfg.BoltPath != "" || cfg.Journal != nil) {
		return nil, errors.New("daemon: DatabaseURL excludes BoltPath and Journal")
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	d := &Daemon{log: log, streamGrace: cfg.StreamGrace, failureTimeout: cfg.FailureTimeout}
	if d.streamGrace <= 0 {
		d.streamGrace = DefaultStreamGrace
	}
	if d.failureTimeout <= 0 {
		d.failureTimeout = DefaultFailureTimeout
	}
	if err := d.open(ctx, cfg); err != nil {
		return nil, errors.Join(err, d.abandon(cfg.Listener, cfg.Metrics))
	}
	return d, nil
}

// open builds the parts in dependency order, leaving in d what it opened.
func (d *Daemon) open(ctx context.Context, cfg Config) error {
	cfg.Events.Logger = d.log
	bus, err := sse.New(cfg.Events)
	if err != nil {
		return fmt.Errorf("starting the event broker: %w", err)
	}
	d.bus = bus
	if err := d.listen(cfg); err != nil {
		return err
	}
	events := httpapi.NewEvents(bus, d.log)
	// Streams first, then the other listeners: a webhook or a count
	// follows the event operators see.
	listeners := []ask.Listener{events}
	if cfg.Metrics != nil {
		d.metrics = metrics.New(httpapi.LimitNames...)
		d.metrics.Build(cmp.Or(cfg.API.Version, httpapi.DefaultVersion), storeName(cfg))
		d.openMetricsServer(cfg)
		listeners = append(listeners, d.metrics)
		cfg.API.Meter = d.metrics
	}
	if cfg.BoltPath != "" {
		boltOpts := cfg.Bolt
		boltOpts.Logger = d.log
		if d.journal, err = pending.OpenBolt(cfg.BoltPath, boltOpts); err != nil {
			return fmt.Errorf("opening the question store: %w", err)
		}
		// Said here, before the store restores what the file holds.
		d.log.Info("question store opened", zap.String("path", cfg.BoltPath))
	}
	if cfg.DatabaseURL != "" {
		if err := d.openPostgres(ctx, cfg); err != nil {
			return err
		}
	}
	if err := d.openNotifier(ctx, cfg); err != nil {
		return err
	}
	announce := ask.NewAnnouncements(d.log, append(listeners, d.notify)...)
	if err := d.openStore(ctx, cfg, events, announce); err != nil {
		return err
	}
	if cfg.API.Sessions == nil {
		sessions, err := d.openSessions(ctx, cfg.Sessions)
		if err != nil {
			return err
		}
		cfg.API.Sessions = sessions
	}
	if cfg.Upstream.URL != "" {
		cfg.Upstream.Logger = d.log
		if cfg.API.Upstream, err = overlay.New(cfg.Upstream); err != nil {
			return err
		}
		d.upstream = cfg.API.Upstream
	}
	var store ask.QuestionStore = d.store
	askOpts := httpapi.AskOptions(cfg.API)
	if d.pg != nil {
		store = d.pg.mirror // reads that miss catch up with the other replicas
		askOpts.SharedWaits = d.pg.mirror
	}
	if cfg.WrapStore != nil {
		store = cfg.WrapStore(store)
	}
	cfg.API.Logger = d.log
	cfg.API.Retention = cfg.Store.Retention // what MCP tasks promise (mcptasks)
	askOpts.Logger = d.log
	if cfg.API.Meter != nil {
		askOpts.OnRefused = cfg.API.Meter.Refused
	}
	if d.questions, err = ask.New(store, cfg.API.Sessions, announce, askOpts); err != nil {
		return fmt.Errorf("building the question service: %w", err)
	}
	if cfg.API.Ready == nil {
		cfg.API.Ready = d.store // not a wrapper's: readiness is the store's own
	}
	if d.api, err = httpapi.New(d.questions, events, cfg.API); err != nil {
		return fmt.Errorf("building the HTTP API: %w", err)
	}
	d.observe()
	var handler http.Handler = d.api
	if cfg.Wrap != nil {
		handler = cfg.Wrap(handler)
	}
	connOpts := cfg.Conns
	connOpts.Logger, connOpts.TLS = d.log, cfg.TLS != nil
	if d.conns, err = connguard.New(connOpts); err != nil {
		return fmt.Errorf("bounding connections: %w", err)
	}
	d.ln = d.conns.Listener(d.ln)
	d.http = &http.Server{
		Handler:           d.conns.Handler(handler),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: event streams and long-polls stay open for
		// minutes; each of them bounds its own writes.
		ErrorLog:    zap.NewStdLog(d.log.Named("http")),
		ConnState:   d.conns.ConnState,
		ConnContext: d.conns.ConnContext,
		// HTTP/2 (when cfg.TLS offers "h2"): a stream cut off while its
		// connection takes no byte keeps its handler, and its stream slot,
		// in a write until the connection dies; so it dies after as long
		// as one event frame may take.
		HTTP2: &http.HTTP2Config{WriteByteTimeout: cmp.Or(cfg.Events.WriteTimeout, sse.DefaultWriteTimeout)},
	}
	if cfg.TLS != nil {
		d.http.TLSConfig = cfg.TLS
		d.ln = tls.NewListener(d.ln, cfg.TLS)
	}
	return nil
}

// listen binds the listener early: notifications link to its address.
func (d *Daemon) listen(cfg Config) error {
	if d.ln = cfg.Listener; d.ln != nil {
		return nil
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	d.ln = ln
	return nil
}

// openNotifier starts the webhooks' notifier, its outbox in the question
// database when the daemon opened one. It starts without webhooks too, so
// that an outbox left for webhooks no longer configured is emptied.
func (d *Daemon) openNotifier(ctx context.Context, cfg Config) error {
	opts := cfg.Notify
	opts.Logger = d.log
	if opts.Link == "" {
		opts.Link = PageURL(cfg.PublicURL, d.ln.Addr(), cfg.TLS != nil)
	}
	if d.journal != nil {
		outbox, err := d.journal.Table("notify-outbox")
		if err != nil {
			return fmt.Errorf("opening the notification outbox: %w", err)
		}
		opts.Outbox = outbox
	}
	if d.pg != nil {
		opts.Outbox = d.pg.db.Outbox()
	}
	n, err := notify.New(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting notifications: %w", err)
	}
	d.notify = n
	return nil
}

// publicURL is configured, or else the listener's address, with localhost
// for an unspecified host.
func publicURL(configured string, addr net.Addr, secure bool) string {
	if configured != "" {
		return configured
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	scheme := "http"
	if secure {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// openStore opens the memory store, or the durable one when cfg names a
// journal, restoring what the journal holds.
func (d *Daemon) openStore(ctx context.Context, cfg Config, events *httpapi.Events, announce *ask.Announcements) error {
	opts := cfg.Store
	opts.OnEnd, opts.Logger, opts.Journal = announce.Ended, d.log, cfg.Journal
	if d.journal != nil {
		opts.Journal = d.journal
	}
	if d.pg != nil {
		return d.openReplica(ctx, opts, events)
	}
	if opts.Journal != nil && d.metrics != nil {
		opts.Journal = d.metrics.Journal(opts.Journal)
	}
	if opts.Journal == nil {
		d.store = pending.New(opts)
		return nil
	}
	d.durable = true
	store, err := pending.Open(ctx, opts)
	if err != nil {
		if cfg.BoltPath != "" {
			return fmt.Errorf("restoring questions from %s: %w", cfg.BoltPath, err)
		}
		return fmt.Errorf("restoring questions: %w", err)
	}
	d.store = store
	return nil
}

// openSessions opens the session registry, in the question database when
// the daemon opened one: a session set to "none" must stay "none" across
// restarts.
func (d *Daemon) openSessions(ctx context.Context, opts session.Options) (session.Records, error) {
	if d.pg != nil {
		return d.pg.db.Sessions(opts)
	}
	if d.journal != nil {
		table, err := d.journal.Table("sessions")
		if err != nil {
			return nil, fmt.Errorf("opening the session records: %w", err)
		}
		opts.Journal = table
	}
	registry, err := session.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("opening the session registry: %w", err)
	}
	return registry, nil
}

// abandon closes what New opened before it failed; nothing was served.
func (d *Daemon) abandon(given, metricsLn net.Listener) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.failureTimeout)
	defer cancel()
	var errs []error
	if d.ln != nil {
		errs = append(errs, d.ln.Close())
	} else if given != nil {
		errs = append(errs, given.Close())
	}
	if metricsLn != nil {
		errs = append(errs, metricsLn.Close())
	}
	if d.bus != nil {
		errs = append(errs, d.bus.Close(ctx))
	}
	d.stopFollowing()
	if d.store != nil {
		errs = append(errs, d.store.Close(ctx))
	}
	if d.notify != nil {
		errs = append(errs, d.notify.Close(ctx))
	}
	if d.journal != nil {
		errs = append(errs, d.journal.Close())
	}
	d.closePostgres()
	return errors.Join(errs...)
}

// Addr is the address the daemon listens on.
func (d *Daemon) Addr() net.Addr { return d.ln.Addr() }

// API is the daemon's HTTP API.
func (d *Daemon) API() *httpapi.Server { return d.api }

// Questions returns the question service every protocol asks through.
func (d *Daemon) Questions() *ask.Service { return d.questions }

// Store is the daemon's question store.
func (d *Daemon) Store() *pending.Store { return d.store }

// Bus is the daemon's event broker.
func (d *Daemon) Bus() *sse.Broker { return d.bus }

// Journal is the bbolt file Config.BoltPath opened; nil otherwise.
func (d *Daemon) Journal() *pending.Bolt { return d.journal }

// Serve serves HTTP until Shutdown, then returns nil at once: Shutdown is
// still running, so wait for it to return before exiting. If serving fails
// (the listener dies), Serve shuts the daemon down itself, within
// Config.FailureTimeout, and returns the error with whatever went wrong
// while shutting down. Call it once.
func (d *Daemon) Serve() error {
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		return nil
	}
	d.serving = true
	if d.upstream != nil {
		// Under d.mu, as the shutdown that stops it reads stopWatch.
		var ctx context.Context
		ctx, d.stopWatch = context.WithCancel(context.Background())
		d.watched = make(chan struct{})
		go func() {
			defer close(d.watched)
			d.upstream.Watch(ctx)
		}()
	}
	d.mu.Unlock()
	d.serveMetrics()
	err := d.http.Serve(d.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	d.log.Error("serving failed; shutting down", zap.Error(err))
	ctx, cancel := context.WithTimeout(context.Background(), d.failureTimeout)
	defer cancel()
	return errors.Join(fmt.Errorf("serving: %w", err), d.Shutdown(ctx))
}

// storeName names the question store cfg opens, for questiond_build_info.
func storeName(cfg Config) string {
	switch {
	case cfg.DatabaseURL != "":
		return "postgres"
	case cfg.BoltPath != "":
		return "bolt"
	case cfg.Journal != nil:
		return "journal"
	default:
		return "memory"
	}
}
