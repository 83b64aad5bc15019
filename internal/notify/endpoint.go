package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// delivery is one notification on its way to one endpoint.
type delivery struct {
	id, event string
	body      []byte // shared by every endpoint's delivery of the event
	at        time.Time
	// Guarded by the endpoint's mu:
	stored   bool      // in the outbox
	storedAt time.Time // when its writing to the outbox returned
	lost     bool      // stored, and another replica holds it now
}

// endpoint is one webhook and its queue, drained by one worker, oldest
// first: while the endpoint fails, the notification at its head is retried
// and the rest wait, so a failing endpoint costs one attempt at a time.
type endpoint struct {
	n     *Notifier
	url   string
	key   string // names it in the outbox
	label string // names it in logs: position, scheme and host
	log   *zap.Logger
	wake  chan struct{}

	mu        sync.Mutex
	queue     []*delivery // waiting, oldest first; at most Options.QueueLength
	inflight  *delivery   // taken by the worker, not finished
	forget    []string    // outbox keys of dropped deliveries, to delete
	overflown bool        // a full queue has been logged since the last success

	// The worker's own: whether the endpoint is failing, so that a failure
	// is logged once and not per notification.
	failing bool
	givenUp int
}

func newEndpoint(n *Notifier, position int, raw string) (*endpoint, error) {
	if err := CheckURL(raw); err != nil {
		return nil, fmt.Errorf("webhook %d: %w", position, err)
	}
	u, _ := url.Parse(raw)
	label := fmt.Sprintf("#%d %s", position, redact(u))
	return &endpoint{n: n, url: raw, key: endpointKey(raw), label: label,
		log: n.log.With(zap.String("webhook", label)), wake: make(chan struct{}, 1)}, nil
}

// add queues d; when the queue is full its oldest notification is dropped,
// as the newest tells of the questions people can still answer.
func (e *endpoint) add(d *delivery) {
	e.mu.Lock()
	full := len(e.queue) >= e.n.opts.QueueLength
	if full {
		dropped := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		if dropped.stored {
			e.forget = append(e.forget, e.recordKey(dropped))
		}
	}
	first := full && !e.overflown
	e.overflown = e.overflown || full
	e.queue = append(e.queue, d)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	if first {
		e.log.Warn("webhook queue full: dropping its oldest notifications", zap.Int("queue", e.n.opts.QueueLength))
	}
}

func (e *endpoint) recordKey(d *delivery) string { return e.key + "/" + d.id }

// run delivers until Close: after it, until the queue is empty or the
// endpoint fails; once ctx ends, at once, leaving the notification in flight
// in place.
func (e *endpoint) run(ctx context.Context) {
	for {
		e.forgetDropped(ctx)
		d := e.take()
		if d == nil {
			select {
			case <-e.wake:
				continue
			case <-e.n.closing:
				return
			case <-ctx.Done():
				return
			}
		}
		if !e.deliver(ctx, d) {
			return
		}
	}
}

func (e *endpoint) take() *delivery {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		return nil
	}
	d := e.queue[0]
	e.queue[0] = nil
	e.queue = e.queue[1:]
	e.inflight = d
	return d
}

// deliver POSTs d until it is accepted, refused for good or too old; it
// returns false, leaving d in flight, if ctx ended first or Close began
// while it waited to retry.
func (e *endpoint) deliver(ctx context.Context, d *delivery) bool {
	for attempt := 1; ; attempt++ {
		if held, ok := e.held(ctx, d); !ok {
			return false
		} else if !held {
			e.mu.Lock()
			e.inflight = nil // not ours to delete from the outbox
			e.mu.Unlock()
			return true
		}
		if time.Since(d.at) >= e.n.opts.MaxAge {
			e.giveUp("it was not delivered within the maximum age")
			e.finish(ctx, d)
			return true
		}
		err := e.post(ctx, d)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			e.recovered()
			e.finish(ctx, d)
			return true
		}
		e.failed(err)
		var refused *statusError
		if errors.As(err, &refused) && refused.permanent() {
			e.giveUp("the webhook refused it")
			e.finish(ctx, d)
			return true
		}
		e.storeQueued(ctx)
		wait := e.backoff(attempt, err)
		if left := e.n.opts.MaxAge - time.Since(d.at); left < wait {
			wait = max(left, 0)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-e.n.closing: // no use spending Close's grace on a failing webhook
			timer.Stop()
			return false
		case <-timer.C:
		}
	}
}

// held waits while d's lease may have run out (see Claimer) and says
// whether d is still this notifier's to send; ok is false if ctx ended or
// Close began meanwhile.
func (e *endpoint) held(ctx context.Context, d *delivery) (held, ok bool) {
	for {
		e.mu.Lock()
		lost, stored := d.lost, d.stored
		e.mu.Unlock()
		if lost {
			return false, true
		}
		may, renewal := e.n.mayDeliver(stored)
		if may {
			return true, true
		}
		select {
		case <-renewal:
		case <-ctx.Done():
			return false, false
		case <-e.n.closing:
			return false, false
		}
	}
}

// backoff is the wait after the attempt-th failure: exponential from
// MinBackoff to MaxBackoff, half of it random so endpoints that failed
// together do not retry together, and at least what Retry-After asks.
func (e *endpoint) backoff(attempt int, err error) time.Duration {
	o := e.n.opts
	d := o.MaxBackoff
	if attempt < 32 {
		d = min(o.MinBackoff<<(attempt-1), o.MaxBackoff)
	}
	d = d/2 + rand.N(d/2+1)
	var refused *statusError
	if errors.As(err, &refused) && refused.retryAfter > d {
		d = min(refused.retryAfter, o.MaxBackoff)
	}
	return d
}

// finish forgets d, in the outbox too.
func (e *endpoint) finish(ctx context.Context, d *delivery) {
	e.mu.Lock()
	e.inflight = nil
	stored := d.stored
	e.mu.Unlock()
	if stored && e.n.outbox != nil {
		if err := e.n.outbox.Delete(context.WithoutCancel(ctx), e.recordKey(d)); err != nil {
			e.log.Warn("could not delete a delivered notification from the outbox", zap.Error(err))
		}
	}
}

// failed logs the first failure after a success.
func (e *endpoint) failed(err error) {
	if e.failing {
		return
	}
	e.failing = true
	e.log.Warn("webhook failing; retrying its notifications with backoff (logged again only once it recovers)", zap.Error(err))
}

func (e *endpoint) giveUp(why string) {
	e.givenUp++
	if e.givenUp == 1 {
		e.log.Warn("giving up on webhook notifications (logged again only once it recovers)", zap.String("reason", why),
			zap.Duration("maxAge", e.n.opts.MaxAge))
	}
}

func (e *endpoint) recovered() {
	e.mu.Lock()
	e.overflown = false
	e.mu.Unlock()
	if e.failing {
		e.log.Info("webhook recovered", zap.Int("givenUp", e.givenUp))
	}
	e.failing, e.givenUp = false, 0
}

// post makes one attempt.
func (e *endpoint) post(ctx context.Context, d *delivery) error {
	ctx, cancel := context.WithTimeout(ctx, e.n.opts.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(d.body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", e.label, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "questiond-webhook")
	req.Header.Set(HeaderEvent, d.event)
	req.Header.Set(HeaderEventID, d.id)
	if secret := e.n.opts.Secret; len(secret) > 0 {
		now := time.Now().Unix()
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(now, 10))
		req.Header.Set(HeaderSignature, Sign(secret, now, d.body))
	}
	resp, err := e.n.client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its message quotes the whole URL
		}
		return fmt.Errorf("POST %s: %w", e.label, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return &statusError{status: resp.StatusCode, retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
}

// statusError is a webhook's answer other than 2xx.
type statusError struct {
	status     int
	retryAfter time.Duration
}

func (s *statusError) Error() string {
	return fmt.Sprintf("answered %d %s", s.status, http.StatusText(s.status))
}

// permanent reports whether retrying cannot help: a redirect (not
// followed) or a client error other than a timeout, a conflict or a rate
// limit.
func (s *statusError) permanent() bool {
	switch s.status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return s.status >= 300 && s.status < 500
}

func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
