// Package testserver assembles a real questiond on a loopback port for
// tests, the way cmd/questiond does (event broker, memory or durable store,
// HTTP API, http.Server), and stops it the same way.
package testserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// DefaultStopTimeout bounds Stop when Config.StopTimeout is zero.
const DefaultStopTimeout = 10 * time.Second

// Config says how to assemble a server. The zero value is a memory store on
// 127.0.0.1:0 with every part at its defaults, logging nowhere.
type Config struct {
	// API configures the HTTP API; its Logger is Logger.
	API httpapi.Options
	// Events configures the event broker; its Logger is Logger.
	Events sse.Options
	// Store configures the pending store; its OnEnd, Logger and Journal are
	// the server's.
	Store pending.MemoryOptions
	// BoltPath, if set, makes the store durable: a bbolt file opened with
	// Bolt (whose Logger is Logger), closed by Stop.
	BoltPath string
	Bolt     pending.BoltOptions
	// Journal, if set, makes the store durable through a journal the caller
	// owns and closes. It excludes BoltPath.
	Journal pending.Journal
	// Addr is where to listen; "" means 127.0.0.1:0.
	Addr string
	// Wrap, if set, puts a handler in front of the API (fault injection,
	// counting).
	Wrap func(http.Handler) http.Handler
	// Logger gets every part's logs; nil means zap.NewNop().
	Logger *zap.Logger
	// StopTimeout bounds Stop; zero means DefaultStopTimeout.
	StopTimeout time.Duration
}

// Server is a running questiond. Its fields are for reading.
type Server struct {
	URL     string // "http://" + Addr
	Addr    string // the address it listens on, host:port
	API     *httpapi.Server
	Store   *pending.Memory
	Bus     *sse.Broker
	Journal *pending.Bolt // the file Config.BoltPath opened; nil otherwise

	durable bool // pending questions outlive Stop
	log     *zap.Logger
	timeout time.Duration
	http    *http.Server
	silent  *httpapi.SilentConns
	served  chan error
	once    sync.Once
}

// Start assembles a server and starts serving. On an error nothing is left
// running.
func Start(cfg Config) (*Server, error) {
	if cfg.BoltPath != "" && cfg.Journal != nil {
		return nil, errors.New("testserver: both BoltPath and Journal are set")
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{log: log, timeout: cfg.StopTimeout, served: make(chan error, 1)}
	if s.timeout == 0 {
		s.timeout = DefaultStopTimeout
	}
	cfg.Events.Logger = log
	bus, err := sse.New(cfg.Events)
	if err != nil {
		return nil, fmt.Errorf("starting the event broker: %w", err)
	}
	s.Bus = bus
	events := httpapi.NewEvents(bus, log)
	if err := s.openStore(cfg, events); err != nil {
		return nil, errors.Join(err, s.abandon())
	}
	cfg.API.Logger = log
	if s.API, err = httpapi.New(s.Store, events, cfg.API); err != nil {
		return nil, errors.Join(fmt.Errorf("building the HTTP API: %w", err), s.abandon())
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("listening on %s: %w", addr, err), s.abandon())
	}
	var handler http.Handler = s.API
	if cfg.Wrap != nil {
		handler = cfg.Wrap(handler)
	}
	s.silent = httpapi.NewSilentConns()
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
		ConnState:         s.silent.Track,
	}
	s.Addr = ln.Addr().String()
	s.URL = "http://" + s.Addr
	go func() { s.served <- s.http.Serve(ln) }()
	return s, nil
}

// openStore opens the memory store, or the durable one when cfg names a
// journal, restoring what the journal holds.
func (s *Server) openStore(cfg Config, events *httpapi.Events) error {
	opts := cfg.Store
	opts.OnEnd, opts.Logger, opts.Journal = events.Ended, s.log, cfg.Journal
	if cfg.BoltPath != "" {
		boltOpts := cfg.Bolt
		boltOpts.Logger = s.log
		journal, err := pending.OpenBolt(cfg.BoltPath, boltOpts)
		if err != nil {
			return fmt.Errorf("opening the question store: %w", err)
		}
		s.Journal, opts.Journal = journal, journal
	}
	if opts.Journal == nil {
		s.Store = pending.NewMemory(opts)
		return nil
	}
	s.durable = true
	store, err := pending.Open(context.Background(), opts)
	if err != nil {
		return fmt.Errorf("restoring questions: %w", err)
	}
	s.Store = store
	return nil
}

// abandon closes what Start opened before it failed; nothing was served.
func (s *Server) abandon() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	errs := []error{s.Bus.Close(ctx)}
	if s.Store != nil {
		errs = append(errs, s.Store.Close(ctx))
	}
	if s.Journal != nil {
		errs = append(errs, s.Journal.Close())
	}
	return errors.Join(errs...)
}
