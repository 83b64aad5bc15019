package testserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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
	s.silent.CloseAll()
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
