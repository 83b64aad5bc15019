// Package testserver runs a real questiond on a loopback port for tests: the
// daemon cmd/questiond runs (package daemon), started and stopped the same
// way.
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

	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// DefaultStopTimeout bounds Stop when Config.StopTimeout is zero.
const DefaultStopTimeout = 10 * time.Second

// Config says how to assemble a server. The zero value is a memory store on
// 127.0.0.1:0 with every part at its defaults, logging nowhere.
type Config struct {
	// API configures the HTTP API; its Logger is Logger. When its Sessions
	// is nil, sessions are kept as the daemon keeps them: in the BoltPath
	// file when there is one, in memory otherwise.
	API httpapi.Options
	// Events configures the event broker; its Logger is Logger.
	Events sse.Options
	// Store configures the pending store; its OnEnd, Logger and Journal are
	// the server's.
	Store pending.Options
	// BoltPath, if set, makes the store durable: a bbolt file opened with
	// Bolt (whose Logger is Logger), closed by Stop.
	BoltPath string
	Bolt     pending.BoltOptions
	// Journal, if set, makes the store durable through a journal the caller
	// owns and closes. It excludes BoltPath.
	Journal pending.Journal
	// DatabaseURL, if set, keeps the questions in that PostgreSQL database
	// (--store postgres). It excludes BoltPath and Journal.
	DatabaseURL string
	// Addr is where to listen; "" means 127.0.0.1:0.
	Addr string
	// Metrics, if set, is a listener to serve GET /metrics on, as
	// --metrics-addr does; Stop closes it.
	Metrics net.Listener
	// Wrap, if set, puts a handler in front of the API (fault injection,
	// counting).
	Wrap func(http.Handler) http.Handler
	// WrapStore, if set, puts a store in front of the one the API uses
	// (fault injection); Stop still ends questions in the real store.
	WrapStore func(httpapi.Store) httpapi.Store
	// Logger gets every part's logs; nil means zap.NewNop().
	Logger *zap.Logger
	// StopTimeout bounds Stop; zero means DefaultStopTimeout.
	StopTimeout time.Duration
	// Conns bounds request bodies' read time and open connections.
	Conns connguard.Options
}

// Server is a running questiond. Its fields are for reading.
type Server struct {
	URL     string // "http://" + Addr
	Addr    string // the address it listens on, host:port
	API     *httpapi.Server
	Store   *pending.Store
	Bus     *sse.Broker
	Journal *pending.Bolt // the file Config.BoltPath opened; nil otherwise

	daemon  *daemon.Daemon
	timeout time.Duration
	served  chan error
	once    sync.Once
}

// Start assembles a server and starts serving. On an error nothing is left
// running.
func Start(cfg Config) (*Server, error) {
	timeout := cfg.StopTimeout
	if timeout == 0 {
		timeout = DefaultStopTimeout
	}
	d, err := daemon.New(context.Background(), daemon.Config{
		API:            cfg.API,
		Events:         cfg.Events,
		Store:          cfg.Store,
		BoltPath:       cfg.BoltPath,
		Bolt:           cfg.Bolt,
		Journal:        cfg.Journal,
		DatabaseURL:    cfg.DatabaseURL,
		Addr:           cfg.Addr,
		Metrics:        cfg.Metrics,
		Wrap:           cfg.Wrap,
		WrapStore:      cfg.WrapStore,
		Logger:         cfg.Logger,
		FailureTimeout: timeout,
		Conns:          cfg.Conns,
	})
	if err != nil {
		return nil, fmt.Errorf("testserver: %w", err)
	}
	s := &Server{
		Addr:    d.Addr().String(),
		API:     d.API(),
		Store:   d.Store(),
		Bus:     d.Bus(),
		Journal: d.Journal(),
		daemon:  d,
		timeout: timeout,
		served:  make(chan error, 1),
	}
	s.URL = "http://" + s.Addr
	go func() { s.served <- d.Serve() }()
	return s, nil
}

// Stop shuts the server down as cmd/questiond does (daemon.Daemon.Shutdown,
// within Config.StopTimeout) and waits for serving to end. Only the first
// call stops the server and reports what went wrong; later calls return nil.
func (s *Server) Stop() error {
	err := error(nil)
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		err = errors.Join(s.daemon.Shutdown(ctx), <-s.served)
	})
	return err
}
