package testserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/questiond/questiond/internal/pending"
)

// Stop shuts the server down as cmd/questiond does: refuse new questions;
// with the memory store end every pending one as cancel (the durable store
// keeps them for the next start); close the event streams; let waiting
// requests go; stop serving; close the store and the file it opened. Only
// the first call stops the server and reports what went wrong; later calls
// return nil.
func (s *Server) Stop() error {
	err := error(nil)
	s.once.Do(func() { err = s.stop() })
	return err
}

func (s *Server) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	s.API.Drain()
	errs := []error{s.endPending(ctx)}
	if err := s.Bus.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing event streams: %w", err))
	}
	s.API.Release()
	s.fresh.closeAll()
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the HTTP server: %w", err))
		_ = s.http.Close()
	}
	if err := <-s.served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serving: %w", err))
	}
	// Anything created by a request that was already past the door.
	errs = append(errs, s.endPending(ctx))
	if err := s.Store.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing the store: %w", err))
	}
	if s.Journal != nil {
		if err := s.Journal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the question database: %w", err))
		}
	}
	return errors.Join(errs...)
}

// endPending ends every pending question as cancel, unless the store keeps
// them across restarts.
func (s *Server) endPending(ctx context.Context) error {
	if s.durable {
		return nil
	}
	_, err := s.Store.SettleAll(ctx, pending.Outcome{
		Ending: pending.EndShutdown,
		Result: pending.Result{Action: pending.ActionCancel},
	})
	if err != nil {
		return fmt.Errorf("ending pending questions: %w", err)
	}
	return nil
}

// freshConns tracks connections that have not sent a request yet, so Stop
// can close them at once: http.Server.Shutdown waits up to five seconds for
// such a connection (a client's spare keep-alive socket) in case a request
// is on its way, and a stopping server answers none anyway.
type freshConns struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closing bool // Stop has begun: a connection accepted now is closed at once
}

func newFreshConns() *freshConns { return &freshConns{conns: make(map[net.Conn]struct{})} }

// track is the http.Server's ConnState hook.
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case state != http.StateNew:
		delete(f.conns, c)
	case f.closing:
		_ = c.Close()
	default:
		f.conns[c] = struct{}{}
	}
}

// closeAll closes every connection that has not sent a request, now and
// from now on.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}
