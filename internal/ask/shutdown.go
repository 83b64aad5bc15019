package ask

import (
	"context"
	"fmt"
)

// ReleaseStage is when, during Release, a hook an adapter registered runs.
type ReleaseStage int

const (
	// AfterCalls: every call that withdraws its question on Release (see
	// EnterCall) has returned, having withdrawn it; endings may still be
	// under way. An adapter closes the sessions those calls ran in.
	AfterCalls ReleaseStage = iota
	// AfterEndings: every ending is stored and reported to the store's
	// OnEnd. An adapter flushes what it shows of endings.
	AfterEndings
)

type releaseHook struct {
	stage ReleaseStage
	run   func(ctx context.Context)
}

// OnRelease registers run to be called at stage of every Release, in the
// order registered. Register before serving.
func (s *Service) OnRelease(stage ReleaseStage, run func(ctx context.Context)) {
	s.released = append(s.released, releaseHook{stage, run})
}

func (s *Service) runHooks(ctx context.Context, stage ReleaseStage) {
	for _, h := range s.released {
		if h.stage == stage {
			h.run(ctx)
		}
	}
}

// Drain refuses new questions (ErrShuttingDown) from now on, so a shutdown
// can settle what is pending without new questions slipping in. A question
// already past the door goes on: see WaitForCreates.
func (s *Service) Drain() {
	s.draining.Store(true)
	s.creates.Close()
}

// WaitForCreates calls Drain and returns once every question that got in
// before it has been stored and announced, or has failed, or with ctx's
// error if ctx ends first. After it, the store holds every question the
// service will ever create, so a shutdown can end them all.
func (s *Service) WaitForCreates(ctx context.Context) error {
	s.Drain()
	if err := s.creates.CloseAndWait(ctx); err != nil {
		return fmt.Errorf("waiting for questions being created: %w", err)
	}
	return nil
}

// Release lets go of every wait still under way, for a shutdown: Wait
// returns and Released reports true, so a caller answers with the question
// as it is (pending) and the agent collects its result once questiond is
// back. Calls entered with EnterCall withdraw their questions instead,
// since nobody could collect those answers. It calls Drain.
//
// Release returns once every such call has returned, having withdrawn its
// question, and every ending already under way (a reply, a reject, a
// withdrawal) has been stored and reported to the store's OnEnd, so its
// event is published; or with ctx's error if ctx ends first. From then on
// endings are refused (ErrShuttingDown): an ending now could no longer be
// announced. Endings the store makes on its own (timeouts) are not held
// back. Hooks registered with OnRelease run at their stages.
func (s *Service) Release(ctx context.Context) error {
	s.Drain()
	s.release()
	err := s.calls.CloseAndWait(ctx)
	s.runHooks(ctx, AfterCalls)
	if err != nil {
		return fmt.Errorf("waiting for MCP tool calls to withdraw their questions: %w", err)
	}
	if err := s.endings.CloseAndWait(ctx); err != nil {
		return fmt.Errorf("waiting for question endings under way: %w", err)
	}
	s.runHooks(ctx, AfterEndings)
	return nil
}

// EnterCall counts in a call that waits for its question and withdraws it
// when released (an MCP tool call), or reports false once Release has
// begun; call the returned leave when the call is over. Release waits for
// every call inside.
func (s *Service) EnterCall() (leave func(), ok bool) {
	if !s.calls.Enter() {
		return nil, false
	}
	return s.calls.Leave, true
}
