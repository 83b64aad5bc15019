package sse

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Broker fans events out to Server-Sent Event subscribers. Publishing only
// queues frames, so it never waits for a client; each subscriber's own
// writer (its request's goroutine, or one started for what was queued on a
// connection taken over) writes them out.
type Broker struct {
	opts        Options
	log         *zap.Logger
	hooks       testHooks
	noDeadlines sync.Once

	// mu guards the fields below. Publish queues while holding it for
	// reading and Close marks every subscriber finishing while holding it
	// for writing: so every event Publish accepted is queued before the end
	// of any stream it goes to. Lock order: mu, then a subscriber's mu.
	mu        sync.RWMutex
	closed    bool
	routes    routes
	drainOnce sync.Once
	drained   chan struct{} // closed once closed and every stream is over

	stopHeartbeat chan struct{}
	heartbeatDone chan struct{}

	// Counted for Stats, outside mu: atomics cost publishing nothing more.
	published atomic.Uint64
	cutOff    atomic.Uint64
}

// testHooks let tests force interleavings. Every field is nil in production.
type testHooks struct {
	registered func() // a subscriber is registered; initial has not run yet
	left       func() // a subscriber's stream is over: its handler returns, or its connection is closed and its goroutines are done
	parked     func() // a writer of a hijacked stream found nothing queued and is returning
	pumping    func() // a merged stream's feed is being read; its handler has not waited for the first frame yet
}

// New returns a running broker (heartbeats start at once).
func New(opts Options) (*Broker, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Broker{
		opts:          o,
		log:           o.Logger.Named("sse"),
		routes:        newRoutes(),
		drained:       make(chan struct{}),
		stopHeartbeat: make(chan struct{}),
		heartbeatDone: make(chan struct{}),
	}
	go b.beat(time.NewTicker(o.Heartbeat))
	return b, nil
}

// Publish queues m for every matching subscriber and returns; once it
// returned nil, each of them gets m before its stream ends. It never waits
// for a subscriber: one whose queue is full is cut off instead. It assigns an
// evt_ id when m.Event.ID is empty; the same id is used on /event and
// /global/event. After Close it returns ErrClosed.
func (b *Broker) Publish(ctx context.Context, m Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publishing %q: %w", m.Event.Type, err)
	}
	f, err := b.framesOf(m)
	if err == nil {
		err = b.deliver(m.Directory, m.Audience, f, false)
	}
	if err != nil {
		return fmt.Errorf("publishing %q: %w", m.Event.Type, err)
	}
	b.published.Add(1)
	return nil
}

// deliver queues f for every subscriber of directory ("" = all of them) and
// audience. A heartbeat only goes to subscribers with nothing queued.
func (b *Broker) deliver(directory string, audience Audience, f frames, heartbeat bool) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	b.routes.each(directory, audience, func(s *subscriber) {
		if s.enqueue(Frame{From: FromBroker, Note: f.note, wire: f.of(s.scope)}, heartbeat) {
			s.logCutOff(reasonQueueFull, nil)
		}
	})
	return nil
}

// Subscribers returns the number of connected subscribers.
func (b *Broker) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.routes.count
}

// Stats is what a broker has done so far, for metrics.
type Stats struct {
	Subscribers int    // connected now
	Published   uint64 // events Publish accepted (not heartbeats, not the first frames of a stream)
	CutOff      uint64 // subscribers cut off: a full queue, a write timeout, or Close's grace over
}

// Stats returns the broker's counts. Publish only adds to atomic counters
// for it; the subscriber count takes the lock, so call it at scrape time,
// not per event.
func (b *Broker) Stats() Stats {
	return Stats{Subscribers: b.Subscribers(), Published: b.published.Load(), CutOff: b.cutOff.Load()}
}

// Watching reports whether a stream of audience's kind is connected
// (Everyone: any stream). A stream counts from the moment it is registered,
// before its first frames are made.
func (b *Broker) Watching(audience Audience) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	switch audience {
	case Console:
		return b.routes.consoles > 0
	case Standard:
		return b.routes.count > b.routes.consoles
	}
	return b.routes.count > 0
}

// join registers s, so that it gets every event published from now on.
func (b *Broker) join(s *subscriber) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	return b.routes.add(s, b.opts.MaxScopes)
}

// leave forgets s once its stream is over, and its feed with it.
func (b *Broker) leave(s *subscriber) {
	s.end()
	s.release()
	b.mu.Lock()
	b.routes.remove(s)
	last := b.closed && b.routes.count == 0
	b.mu.Unlock()
	if hook := b.hooks.left; hook != nil {
		hook()
	}
	if last {
		b.drain()
	}
}

func (b *Broker) drain() { b.drainOnce.Do(func() { close(b.drained) }) }

// Close ends every stream cleanly and stops heartbeats; it returns once every
// stream is over (its handler returned, or its connection is closed and its
// writer and reader are done), or ctx ends. It may be called more than once.
//
// Each subscriber gets what was queued for it before Close, within
// Options.CloseGrace, then its response ends; one that does not take it in
// time is cut off. If ctx ends first, every remaining stream is cut off at
// once and Close returns ctx's error; their handlers return, and their
// connections close, right after.
func (b *Broker) Close(ctx context.Context) error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.stopHeartbeat)
		by := time.Now().Add(b.opts.CloseGrace)
		b.routes.each("", Everyone, func(s *subscriber) { s.finish(by, reasonCloseGrace) })
	}
	if b.routes.count == 0 {
		b.drain()
	}
	b.mu.Unlock()

	select {
	case <-b.drained:
	case <-ctx.Done():
		b.mu.RLock()
		b.routes.each("", Everyone, func(s *subscriber) { s.cutOff(reasonClosed, ctx.Err()) })
		b.mu.RUnlock()
		return fmt.Errorf("closing event broker: %w", ctx.Err())
	}
	select {
	case <-b.heartbeatDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("closing event broker: %w", ctx.Err())
	}
}
