package sse

import (
	"context"
	"fmt"
	"sync"
	"time"

	r3 "github.com/r3labs/sse/v2"
	"go.uber.org/zap"
)

// Broker fans events out to Server-Sent Event subscribers, on top of
// github.com/r3labs/sse/v2, configured and wrapped so none of its known
// pitfalls can happen.
type Broker struct {
	opts  Options
	log   *zap.Logger
	srv   *r3.Server
	hooks testHooks

	mu           sync.RWMutex
	closed       bool
	scopes       map[string]string // directory → its r3labs stream
	eventStreams []string          // every /event stream; replaced, never changed in place
	subs         map[*subscriber]struct{}

	stopHeartbeat chan struct{}
	heartbeatDone chan struct{}
	drainOnce     sync.Once
	drained       chan struct{} // closed after Close, once the last subscriber left and r3labs is closed
	noDeadlines   sync.Once
}

// testHooks let tests force interleavings. Every field is nil in production.
type testHooks struct {
	registered func() // r3labs registered a subscriber; initial has not run yet
	left       func() // a subscriber's handler is returning
}

// New returns a running broker (heartbeats start at once).
func New(opts Options) (*Broker, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	srv := r3.New()
	srv.AutoReplay = false // otherwise every event is kept for ever and replayed to each new client
	srv.EventTTL = 0       // r3labs only timestamps events it replays: any TTL drops everything
	srv.AutoStream = false // an auto stream is removed under its last client, stranding goroutines
	srv.EncodeBase64 = false
	srv.SplitData = false
	srv.BufferSize = r3.DefaultBufferSize
	srv.CreateStream(streamAll)
	srv.CreateStream(streamGlobal)

	b := &Broker{
		opts:          o,
		log:           o.Logger.Named("sse"),
		srv:           srv,
		scopes:        make(map[string]string),
		eventStreams:  []string{streamAll},
		subs:          make(map[*subscriber]struct{}),
		stopHeartbeat: make(chan struct{}),
		heartbeatDone: make(chan struct{}),
		drained:       make(chan struct{}),
	}
	go b.beat(time.NewTicker(o.Heartbeat))
	return b, nil
}

// Publish sends m to every matching subscriber. It never waits for a
// subscriber: a subscriber that cannot keep up is cut off instead. It assigns
// an evt_ id when m.Event.ID is empty; the same id is used on /event and
// /global/event.
//
// Publish may briefly wait for r3labs to hand earlier events to subscribers'
// queues, which is memory work only; so it must not be called while holding a
// lock that an initial func of ServeEvent or ServeGlobal takes.
func (b *Broker) Publish(ctx context.Context, m Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publishing %q: %w", m.Event.Type, err)
	}
	if err := b.publish(m, false); err != nil {
		return fmt.Errorf("publishing %q: %w", m.Event.Type, err)
	}
	return nil
}

// publish encodes m once per envelope and hands it to every stream it
// belongs on. With try, a stream whose queue is full skips m (heartbeats).
func (b *Broker) publish(m Message, try bool) error {
	if err := prepare(&m.Event); err != nil {
		return err
	}
	event, err := encodeEvent(m.Event)
	if err != nil {
		return err
	}
	global := encodeGlobal(m.Directory, b.opts.Project, event)

	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return ErrClosed
	}
	targets := b.eventStreams // every /event stream
	if m.Directory != "" {
		targets = []string{streamAll}
		if id, ok := b.scopes[m.Directory]; ok {
			targets = append(targets, id)
		}
	}
	b.mu.RUnlock()

	for _, id := range targets {
		b.send(id, event, try)
	}
	b.send(streamGlobal, global, try)
	return nil
}

// send gives r3labs a fresh event: r3labs shares it between the stream's
// subscribers, and some of its options rewrite events in place.
func (b *Broker) send(stream string, data []byte, try bool) {
	ev := &r3.Event{Data: data}
	if !try {
		b.srv.Publish(stream, ev)
		return
	}
	if !b.srv.TryPublish(stream, ev) {
		b.log.Debug("stream busy, event skipped", zap.String("stream", stream))
	}
}

// Subscribers returns the number of connected subscribers.
func (b *Broker) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// join registers sub and returns the r3labs stream it reads.
func (b *Broker) join(sub *subscriber) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return "", ErrClosed
	}
	id, err := b.streamFor(sub.scope)
	if err != nil {
		return "", err
	}
	b.subs[sub] = struct{}{}
	return id, nil
}

// leave forgets sub once its handler is done with the connection.
func (b *Broker) leave(sub *subscriber) {
	b.mu.Lock()
	delete(b.subs, sub)
	last := b.closed && len(b.subs) == 0
	b.mu.Unlock()
	if hook := b.hooks.left; hook != nil {
		hook()
	}
	if last {
		b.drain()
	}
}

// drain closes r3labs once no handler uses it any more. Closing it earlier
// would leave each connected client's r3labs goroutine blocked for ever.
func (b *Broker) drain() {
	b.drainOnce.Do(func() {
		b.srv.Close()
		close(b.drained)
	})
}

// Close ends every stream cleanly and stops heartbeats; it returns once every
// handler has returned or ctx ends.
//
// Subscribers get every event published before Close, then their response
// ends. If ctx ends before every stream drained, the rest are cut off at
// once; their handlers return shortly after and the last one closes r3labs.
func (b *Broker) Close(ctx context.Context) error {
	b.mu.Lock()
	first := !b.closed
	if first {
		b.closed = true
		close(b.stopHeartbeat)
	}
	streams := b.eventStreams
	subs := make([]*subscriber, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	b.mu.Unlock()
	if len(subs) == 0 {
		b.drain()
	}

	if first {
		// r3labs delivers a stream's events in order, so a marker published
		// now reaches each subscriber after everything published before: the
		// subscriber finishes there. One that registers after its stream's
		// marker went by finishes on its own (frameWriter.WriteHeader).
		for _, id := range streams {
			b.srv.Publish(id, endOfStream())
		}
		b.srv.Publish(streamGlobal, endOfStream())
	}
	select {
	case <-b.drained:
	case <-ctx.Done():
		for _, s := range subs {
			s.cutOff("broker closed before the stream drained", ctx.Err())
		}
		return fmt.Errorf("closing event broker: %w", ctx.Err())
	}
	select {
	case <-b.heartbeatDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("closing event broker: %w", ctx.Err())
	}
}

func (b *Broker) isClosed() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.closed
}
