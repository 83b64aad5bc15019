package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// DefaultReconnectGrace is Options.ReconnectGrace when it is zero.
const DefaultReconnectGrace = time.Minute

// graceWaits counts the keyed POST /elicit calls waiting on each question.
// When the last one's connection drops, the question is not withdrawn at
// once: a retry with the same Idempotency-Key within ReconnectGrace attaches
// to the same wait; only if none comes is the question withdrawn.
type graceWaits struct {
	mu    sync.Mutex
	waits map[string]*graceWait // by question id
	// beforeWithdraw, a test hook, runs once graceOver has decided to
	// withdraw a question, before it does.
	beforeWithdraw func(id string)
}

type graceWait struct {
	callers int
	timer   *time.Timer // armed while nobody waits; nil otherwise
	// attachedAt is when the last caller attached here, after the store
	// recorded it: a keyed wait recorded anywhere since is another's.
	attachedAt time.Time
}

// sharedWaits is what a store shared by several replicas offers so that a
// retry taken by one replica keeps another from withdrawing the question:
// Attached records that a keyed caller waits on id here; AttachedWithin
// reports whether one did anywhere within the last d (d is the time since
// this replica's own caller attached, so only later attaches count).
type sharedWaits interface {
	Attached(ctx context.Context, id string)
	AttachedWithin(ctx context.Context, id string, d time.Duration) bool
}

// attach registers a keyed caller waiting on question id, stopping any
// withdrawal the grace period had scheduled.
func (s *Server) attach(id string) {
	if shared, ok := s.store.(sharedWaits); ok {
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
}

// detach unregisters a keyed caller of question id. If it dropped its
// connection and was the last caller, the question is withdrawn after
// ReconnectGrace unless a retry attaches first.
func (s *Server) detach(id string, dropped bool) {
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
func (s *Server) graceOver(id string, w *graceWait) {
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
	if shared, ok := s.store.(sharedWaits); ok && shared.AttachedWithin(context.Background(), id, since) {
		return // the retry went to another replica, which now keeps the wait
	}
	if hook := g.beforeWithdraw; hook != nil {
		hook(id)
	}
	// A retry that attaches from here on (its key found the question still
	// pending) waits on a question about to be withdrawn: it gets the
	// withdrawal at once, the answer a retry a moment later gets from its
	// key (TestRetryAtTheGracesEndGetsTheWithdrawal).
	if !s.draining.Load() {
		_, _ = s.withdraw(id, pending.EndDisconnected)
	}
}
