// Package testserver runs a real questiond on a loopback port for tests: the
// daemon cmd/questiond runs (package daemon), started and stopped the same
// way.
package testserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/defaults"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// DefaultStopTimeout bounds Stop when Config.FailureTimeout is zero.
const DefaultStopTimeout = daemon.DefaultFailureTimeout

// Config says how to assemble a server: the daemon's whole configuration.
// The zero value is a memory store on 127.0.0.1:0 with every part at its
// defaults, logging nowhere. Its FailureTimeout also bounds Stop.
type Config = daemon.Config

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
	timeout := cfg.FailureTimeout
	defaults.Fill(&timeout, DefaultStopTimeout)
	cfg.FailureTimeout = timeout
	d, err := daemon.New(context.Background(), cfg)
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
