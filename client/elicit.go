package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Timing of Elicit's retries and cleanups.
const (
	// firstBackoff is the first retry delay; each failure doubles it, up to
	// Options.MaxBackoff.
	firstBackoff = 200 * time.Millisecond
	// pollGrace is how much longer than PollWait a long-poll may take before
	// it counts as a dropped connection (a proxy that holds it forever).
	pollGrace = 15 * time.Second
	// withdrawTimeout bounds the DELETE sent when ctx is cancelled.
	withdrawTimeout = 5 * time.Second
	// createGrace is how long a POST already on its way may finish after ctx
	// is cancelled, so the question it created is known and can be withdrawn.
	createGrace = 5 * time.Second
)

// Elicit asks the question and waits for its result, across dropped
// connections and daemon restarts, and never asks twice.
//
// Creating: the POST carries an Idempotency-Key (a fresh UUIDv7) and is sent
// again, under the same key, after any failure that may be passing, with
// capped exponential backoff and jitter: every transport error (a refused
// connection, one that broke after the request went out, an answer cut
// mid-body), 502, 503 and 504, and 409 (the first attempt is still being
// created). questiond answers a retry with the question the first attempt
// created, so the question is asked once however many attempts it takes. A
// 429 with Retry-After is sent again after that time; one without (too many
// pending questions, freed only by answers), 422 (the key was used for
// another request), 410 (ErrQuestionGone: the question the key asked has
// ended and its result was forgotten before a retry got it) and every other
// error are returned as they are. With no
// daemon listening at all, Elicit keeps trying until ctx ends, or returns an
// error matching ErrUnreachable after Options.GiveUpUnreached; Options.OnRetry
// sees every failure it retries. Use Create and Wait to fail at once instead.
//
// Waiting: Elicit long-polls GET /elicitations/{id}?wait=PollWait until the
// question ends. Network errors, 5xx answers (a restarting daemon keeps the
// question in its durable store) and 429 are retried by the same id with
// capped exponential backoff and jitter; 4xx answers are returned, among them
// ErrNotFound when the question is gone (a restart with the memory store, or
// beyond the server's retention).
//
// Cancelling ctx withdraws the question (a best-effort DELETE with its own
// short timeout; if ctx ends between attempts of the create, the keyed POST
// is sent once more to name the question) and returns ctx.Err(). A result that arrives first is
// returned instead. Use Params.Timeout to bound how long the question may
// stay pending if the agent dies without withdrawing it.
func (c *Client) Elicit(ctx context.Context, p Params) (*Result, error) {
	e, err := c.createKeyed(ctx, p)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		c.withdrawAfterCancel(ctx, e.ID)
		return nil, ctx.Err()
	}
	if e.Result != nil {
		return e.Result, nil
	}
	res, err := c.Wait(ctx, e.ID)
	if err != nil && ctx.Err() != nil {
		c.withdrawAfterCancel(ctx, e.ID)
		return nil, ctx.Err()
	}
	return res, err
}

// createKeyed creates the elicitation, sending it again under one
// Idempotency-Key until questiond has answered it.
func (c *Client) createKeyed(ctx context.Context, p Params) (*Elicitation, error) {
	body := newCreateBody(p)
	key, err := newIdempotencyKey()
	if err != nil {
		return nil, err
	}
	mayExist := false // an attempt may have created the question
	reached := false  // questiond has answered, or a request may have reached it
	started := time.Now()
	for attempt := 0; ; attempt++ {
		postCtx, stop := outlive(ctx, createGrace)
		ex, err := c.send(postCtx, http.MethodPost, "/elicitations", nil, body, key)
		stop()
		if err == nil {
			return decodeElicitation("creating an elicitation", ex.body)
		}
		mayExist = mayExist || ambiguous(err)
		reached = reached || !notSent(err)
		delay, retry := c.createRetryDelay(err, ex, attempt)
		switch {
		case ctx.Err() != nil:
			if mayExist {
				c.withdrawByKey(ctx, body, key)
			}
			return nil, ctx.Err()
		case !retry:
			return nil, fmt.Errorf("questiond: creating an elicitation: %w", err)
		case !reached && c.giveUp > 0 && time.Since(started) >= c.giveUp:
			return nil, fmt.Errorf("%w: %s did not answer for %s: %w", ErrUnreachable, c.base, c.giveUp, err)
		}
		c.retrying(err, delay)
		if err := c.pause(ctx, delay); err != nil {
			if mayExist {
				c.withdrawByKey(ctx, body, key)
			}
			return nil, err
		}
	}
}

// createRetryDelay says whether a failed keyed POST is sent again, and when.
func (c *Client) createRetryDelay(err error, ex *exchange, attempt int) (time.Duration, bool) {
	var qe *Error
	if !errors.As(err, &qe) {
		return c.backoff(attempt), true // a transport error: the key makes a resend safe
	}
	switch qe.Status {
	case http.StatusConflict, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return c.backoff(attempt), true
	case http.StatusTooManyRequests:
		return retryAfter(ex)
	}
	return 0, false
}

// Wait long-polls the elicitation id until it ends and returns its result,
// retrying dropped connections, 5xx and 429 answers as Elicit does. Unlike
// Elicit it does not withdraw the question when ctx is cancelled, so a
// caller can wait again later.
func (c *Client) Wait(ctx context.Context, id string) (*Result, error) {
	failures := 0
	for {
		started := time.Now()
		pollCtx, cancel := context.WithTimeout(ctx, c.pollWait+pollGrace)
		e, ex, err := c.poll(pollCtx, id)
		cancel()
		if ctx.Err() != nil {
			if err == nil && e.Result != nil {
				return e.Result, nil
			}
			return nil, ctx.Err()
		}
		if err == nil {
			if e.Status == StatusResolved {
				return e.Result, nil
			}
			if time.Since(started) >= min(c.pollWait/2, time.Second) {
				failures = 0
				continue
			}
			// Pending, at once: a daemon on its way down. Do not spin.
		} else {
			var qe *Error
			if errors.As(err, &qe) && qe.Status < 500 && qe.Status != http.StatusTooManyRequests {
				return nil, fmt.Errorf("questiond: waiting for elicitation %s: %w", id, err)
			}
		}
		delay := c.backoff(failures)
		if after, ok := retryAfter(ex); ok {
			delay = max(delay, after)
		}
		failures++
		if err != nil {
			c.retrying(err, delay)
		}
		if err := c.pause(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// poll sends one long-poll.
func (c *Client) poll(ctx context.Context, id string) (*Elicitation, *exchange, error) {
	ex, err := c.do(ctx, http.MethodGet, "/elicitations/"+url.PathEscape(id), waitQuery(c.pollWait), nil)
	if err != nil {
		return nil, ex, err
	}
	e, err := decodeElicitation("reading elicitation "+id, ex.body)
	return e, ex, err
}

// withdrawAfterCancel withdraws id for a caller whose ctx has ended, on a
// context of its own.
func (c *Client) withdrawAfterCancel(ctx context.Context, id string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	_, _ = c.Withdraw(wctx, id)
}

// retrying tells Options.OnRetry about a failure about to be retried.
func (c *Client) retrying(err error, delay time.Duration) {
	if c.onRetry != nil {
		c.onRetry(err, delay)
	}
}

// backoff is the delay before retry number attempt (from 0): exponential,
// capped at MaxBackoff, with the upper half jittered so that agents
// reconnecting to a restarted daemon spread out.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.maxBackoff
	if attempt < 30 {
		d = min(firstBackoff<<attempt, c.maxBackoff)
	}
	half := d / 2
	return half + rand.N(half+1)
}

// pause waits d or until ctx ends.
func (c *Client) pause(ctx context.Context, d time.Duration) error {
	if c.pauseHook != nil {
		return c.pauseHook(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryAfter reads a 429's Retry-After (seconds or an HTTP date).
func retryAfter(ex *exchange) (time.Duration, bool) {
	if ex == nil || ex.status != http.StatusTooManyRequests {
		return 0, false
	}
	text := ex.header.Get("Retry-After")
	if text == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(text); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(text); err == nil {
		return max(time.Until(at), 0), true
	}
	return 0, false
}

// withdrawByKey withdraws the question a cancelled Elicit may have created:
// the keyed POST sent once more names it (creating it, if no attempt did),
// and it is withdrawn, on a context of its own.
func (c *Client) withdrawByKey(ctx context.Context, body createBody, key http.Header) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	ex, err := c.send(wctx, http.MethodPost, "/elicitations", nil, body, key)
	if err != nil {
		return
	}
	if e, err := decodeElicitation("creating an elicitation", ex.body); err == nil {
		_, _ = c.Withdraw(wctx, e.ID)
	}
}

// ambiguous reports whether a failed POST may have created the question:
// the request may have reached questiond (a broken connection, a gateway's
// error), or another attempt under the key is being created (409).
func ambiguous(err error) bool {
	var qe *Error
	if !errors.As(err, &qe) {
		return !notSent(err)
	}
	return qe.Status == http.StatusConflict || qe.Status == http.StatusBadGateway || qe.Status == http.StatusGatewayTimeout
}

// notSent reports whether a transport error happened before the request
// left: the connection could not be made at all. (Go's transport itself
// resends a request that failed on a reused connection before any byte was
// written.)
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// outlive returns a context that ends grace after parent does (and keeps its
// values), so a request already on its way can finish; stop releases it.
func outlive(parent context.Context, grace time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	var timer *time.Timer
	var timerSet = make(chan struct{})
	stopAfter := context.AfterFunc(parent, func() {
		timer = time.AfterFunc(grace, cancel)
		close(timerSet)
	})
	return ctx, func() {
		if !stopAfter() {
			<-timerSet
			timer.Stop()
		}
		cancel()
	}
}
