// Package notify tells webhooks about questions: a signed JSON POST, readable
// by Slack and Mattermost as it is, for every question asked and every
// ending, delivered in the background with retries, bounded in memory, and
// kept in an outbox across restarts.
package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/defaults"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/pending"
)

// Defaults for Options.
const (
	// DefaultMaxAge is how long a notification is retried before it is
	// given up: past an hour, a question is answered, ended, or stale news.
	DefaultMaxAge = time.Hour
	// DefaultQueueLength bounds the notifications waiting for one endpoint;
	// a body without text is under 1 KiB.
	DefaultQueueLength = 1000
	// DefaultAttemptTimeout bounds one POST, answer included.
	DefaultAttemptTimeout = 10 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait between two
	// attempts: it doubles from the first to the second, with jitter.
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 5 * time.Minute
	// DefaultGrace is how long Close lets queued notifications go out
	// before it writes the rest to the outbox.
	DefaultGrace = 2 * time.Second
)

// Outbox keeps notifications not yet delivered across restarts;
// *pending.Table is one. One that several replicas share is a Claimer.
type Outbox interface {
	Load(ctx context.Context) (map[string][]byte, error)
	Put(ctx context.Context, key string, value []byte) error
	Delete(ctx context.Context, key string) error
}

// Options configure a Notifier. Zero values mean the defaults.
type Options struct {
	// URLs are the webhooks every notification is POSTed to. They may hold
	// tokens (a Slack webhook's path does), so logs show only their scheme,
	// host and position.
	URLs []string
	// Secret, if set, signs every delivery (HeaderSignature).
	Secret []byte
	// Link is the page operators answer at, linked from Text.
	Link string
	// IncludeText adds the agent's message, the questions and the answers
	// to bodies; by default they name who asks where, not what.
	IncludeText bool
	MaxAge      time.Duration
	QueueLength int
	// AttemptTimeout bounds one POST.
	AttemptTimeout         time.Duration
	MinBackoff, MaxBackoff time.Duration
	Grace                  time.Duration
	// Outbox, if set, keeps what is not delivered yet across restarts; a
	// Claimer shares it with other replicas' notifiers.
	Outbox Outbox
	// Transport sends the requests; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	Logger    *zap.Logger
}

// Notifier delivers notifications to every endpoint, each with a worker of
// its own. Asked and Ended never block; Close stops it.
type Notifier struct {
	opts   Options
	log    *zap.Logger
	client *http.Client
	outbox Outbox
	// claimer is outbox when it is a Claimer, else nil.
	claimer Claimer

	endpoints []*endpoint
	cancel    context.CancelFunc // ends the workers' attempts and waits
	closing   chan struct{}      // closed by Close: workers return once idle
	workers   sync.WaitGroup

	cancelSweeps context.CancelFunc // nil without sweeps
	sweeper      sync.WaitGroup
	leases       leaseState // with a claimer

	mu     sync.RWMutex // held for reading while a notification is queued
	closed bool
}

// New starts a notifier, with whatever the outbox kept queued again. With no
// URLs it notifies nobody (and empties the outbox).
func New(ctx context.Context, opts Options) (*Notifier, error) {
	opts = withDefaults(opts)
	n := &Notifier{opts: opts, log: opts.Logger.Named("notify"), outbox: opts.Outbox, closing: make(chan struct{})}
	n.claimer, _ = opts.Outbox.(Claimer)
	if n.claimer != nil {
		n.initLeases()
	}
	n.client = &http.Client{
		Transport: opts.Transport,
		// A redirect would send the signed body where nobody configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	seen := map[string]int{}
	for i, raw := range opts.URLs {
		e, err := newEndpoint(n, i+1, raw)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[e.key]; dup {
			return nil, fmt.Errorf("webhook %d repeats webhook %d", i+1, first) // they would share outbox records
		}
		seen[e.key] = i + 1
		n.endpoints = append(n.endpoints, e)
	}
	if err := n.restore(ctx); err != nil {
		return nil, err
	}
	workCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	for _, e := range n.endpoints {
		n.workers.Add(1)
		go func() {
			defer n.workers.Done()
			e.run(workCtx)
		}()
	}
	n.startSweeping(workCtx)
	return n, nil
}

func withDefaults(o Options) Options {
	defaults.Fill(&o.MaxAge, DefaultMaxAge)
	defaults.Fill(&o.QueueLength, DefaultQueueLength)
	defaults.Fill(&o.AttemptTimeout, DefaultAttemptTimeout)
	defaults.Fill(&o.MinBackoff, DefaultMinBackoff)
	defaults.Fill(&o.MaxBackoff, DefaultMaxBackoff)
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	defaults.Fill(&o.Grace, DefaultGrace)
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

// CheckURL reports whether raw can be a webhook: an absolute http or https
// URL. Its error never quotes raw, which may hold a token.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http or https URL")
	}
	return nil
}

// redact is what logs show of a webhook: its scheme and host.
func redact(u *url.URL) string { return u.Scheme + "://" + u.Host + "/…" }

// endpointKey names an endpoint in the outbox without storing its URL.
func endpointKey(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:8])
}

// Asked queues the notification of a new question. It never blocks.
func (n *Notifier) Asked(q *pending.Question) { n.notify(EventAsked, q) }

// Ended queues the notification of q's ending. It never blocks.
func (n *Notifier) Ended(q *pending.Question) { n.notify(EventEnded, q) }

func (n *Notifier) notify(event string, q *pending.Question) {
	if len(n.endpoints) == 0 {
		return
	}
	id := ident.Ascending(ident.Event)
	body, err := newBody(event, id, q, n.opts.Link, n.opts.IncludeText).encode()
	if err != nil {
		n.log.Warn("could not build a notification", zap.Error(err))
		return
	}
	now := time.Now()
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		n.log.Debug("notification after Close dropped", zap.String("event", event), zap.String("question", q.ID))
		return
	}
	for _, e := range n.endpoints {
		e.add(&delivery{id: id, event: event, body: body, at: now})
	}
}

// Close stops taking notifications, lets the queued ones go out for
// Options.Grace (or until ctx ends), then stops every attempt and writes
// what is left to the outbox; without one, what is left is lost, and logged.
// With a Claimer, it then releases what it holds to the other replicas.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	already := n.closed
	n.closed = true
	n.mu.Unlock()
	if already {
		return nil
	}
	close(n.closing)
	idle := make(chan struct{})
	go func() {
		n.workers.Wait()
		close(idle)
	}()
	grace := time.NewTimer(n.opts.Grace)
	select {
	case <-idle:
	case <-grace.C:
	case <-ctx.Done():
	}
	grace.Stop()
	n.cancel()
	<-idle
	n.stopSweeps()
	err := n.keepUndelivered(context.WithoutCancel(ctx))
	err = errors.Join(err, n.release(context.WithoutCancel(ctx)))
	n.client.CloseIdleConnections()
	return err
}

// keepUndelivered writes every notification still queued to the outbox,
// once the workers have stopped.
func (n *Notifier) keepUndelivered(ctx context.Context) error {
	var kept, lost int
	var errs []error
	for _, e := range n.endpoints {
		left := e.undelivered()
		e.forgetDropped(ctx)
		if n.outbox == nil {
			lost += len(left)
			continue
		}
		for _, d := range left {
			if d.stored {
				kept++
				continue
			}
			if err := e.store(ctx, d); err != nil {
				errs = append(errs, err)
				lost++
				continue
			}
			kept++
		}
	}
	switch {
	case lost > 0:
		n.log.Warn("notifications not delivered are lost", zap.Int("lost", lost), zap.Int("kept", kept),
			zap.Bool("durable", n.outbox != nil))
	case kept > 0:
		n.log.Info("notifications not delivered yet are kept in the outbox, for the next start or (shared) another replica", zap.Int("kept", kept), zap.Bool("shared", n.claimer != nil))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("keeping undelivered notifications: %w", err)
	}
	return nil
}
