package ask

import (
	"context"
	"sync"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// graceWaits counts the keyed waiters on each question. When the last
// one's connection drops, the question is not withdrawn at once: a retry
// with the same Idempotency-Key within ReconnectGrace attaches to the same
// wait; only if none comes is the question withdrawn.
type graceWaits struct {
	mu    sync.Mutex
	waits map[string]*graceWait // by question id
}

type graceWait struct {
	callers int
	timer   *time.Timer // armed while nobody waits; nil otherwise
	// attachedAt is when the last caller attached here, after the store
	// recorded it: a keyed wait recorded anywhere since is another's.
	attachedAt time.Time
}

// Attach registers a keyed caller waiting on question id, stopping any
// withdrawal the grace period had scheduled. Call detach when the caller
// stops waiting, with dropped true if its connection dropped: if it was
// the last caller, the question is withdrawn after ReconnectGrace unless a
// retry attaches first.
func (s *Service) Attach(id string) (detach func(dropped bool)) {
	if shared := s.opts.SharedWaits; shared != nil {
		shared.Attached(context.Background(), id)
	}
	g := &s.graces
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waits == nil {
		g.waits = make(map[string]*graceWait)
	}
	w := g.waits[id]
	if w == nil {
		w = &graceWait{}
		g.waits[id] = w
	}
	w.callers++
	w.attachedAt = time.Now()
	if w.timer != nil {
		w.timer.Stop() // if it already fired, its callback sees a caller and does nothing
		w.timer = nil
	}
	return func(dropped bool) { s.detach(id, dropped) }
}

func (s *Service) detach(id string, dropped bool) {
	g := &s.graces
	g.mu.Lock()
	w := g.waits[id]
	w.callers--
	if w.callers > 0 {
		g.mu.Unlock()
		return
	}
	if !dropped {
		delete(g.waits, id)
		g.mu.Unlock()
		return
	}
	w.timer = time.AfterFunc(s.opts.ReconnectGrace, func() { s.graceOver(id, w) })
	g.mu.Unlock()
	if hook := s.onGraceArmed; hook != nil {
		hook(id)
	}
}

// graceOver withdraws question id if nobody came back for it during the
// grace period that w armed.
func (s *Service) graceOver(id string, w *graceWait) {
	g := &s.graces
	g.mu.Lock()
	if g.waits[id] != w || w.callers > 0 {
		g.mu.Unlock()
		return
	}
	delete(g.waits, id)
	since := time.Since(w.attachedAt)
	g.mu.Unlock()
	// Counted from this replica's own last attach, not from the end of
	// the grace: a retry may reach another replica before this one even
	// notices that its caller left.
	if shared := s.opts.SharedWaits; shared != nil && shared.AttachedWithin(context.Background(), id, since) {
		return // the retry went to another replica, which now keeps the wait
	}
	if hook := s.beforeWithdraw; hook != nil {
		hook(id)
	}
	// A retry that attaches from here on (its key found the question still
	// pending) waits on a question about to be withdrawn: it gets the
	// withdrawal at once, the answer a retry a moment later gets from its
	// key (TestRetryAtTheGracesEndGetsTheWithdrawal).
	if !s.draining.Load() {
		_, _ = s.Withdraw(id, pending.EndDisconnected)
	}
}
