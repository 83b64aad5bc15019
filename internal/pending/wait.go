package pending

import (
	"context"
	"fmt"
)

// Wait blocks until the question has ended and returns the ended copy, or
// returns ctx's error (wrapped) when ctx ends first; a caller giving up never
// ends the question. Any number of callers may wait on one question. A
// question that had already ended when ctx ended counts as ended.
func (m *Store) Wait(ctx context.Context, id string) (*Question, error) {
	e, err := m.lookup("wait for", id)
	if err != nil {
		return nil, err
	}
	if hook := m.onWaitEntered; hook != nil {
		hook(id)
	}
	select {
	case <-e.done:
		return m.endedCopy(e), nil
	case <-m.closing:
		// Both may be ready (an ending committed while Close waited for
		// it); the ending is the more useful answer.
		if e.hasEnded() {
			return m.endedCopy(e), nil
		}
		return nil, fmt.Errorf("wait for question %q: %w", id, ErrClosed)
	case <-ctx.Done():
		// Both may be ready; the ending is the more useful answer.
		if e.hasEnded() {
			return m.endedCopy(e), nil
		}
		if cause := context.Cause(ctx); cause != ctx.Err() {
			return nil, fmt.Errorf("wait for question %q: %w: %w", id, ctx.Err(), cause)
		}
		return nil, fmt.Errorf("wait for question %q: %w", id, ctx.Err())
	}
}

func (m *Store) endedCopy(e *entry) *Question {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshot()
}
