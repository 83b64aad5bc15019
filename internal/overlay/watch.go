package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"
)

// Backoff of Watch between two attempts to reach the server's stream.
const (
	watchRetryMin = 500 * time.Millisecond
	watchRetryMax = 30 * time.Second
)

// Watch follows the server's event stream (GET /global/event) until ctx
// ends, to know the tool calls in flight (see Place). A lost stream is
// opened again, the calls heard of so far forgotten (their endings may
// have been missed), after a pause that doubles up to 30 s while the
// server stays away.
func (u *Upstream) Watch(ctx context.Context) {
	pause := watchRetryMin
	for ctx.Err() == nil {
		began := time.Now()
		err := u.watchOnce(ctx)
		u.calls.watching.Store(false)
		u.calls.reset()
		u.lists.watching(false)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > watchRetryMax {
			pause = watchRetryMin // it was up a while: this is a new outage
		}
		u.log.Warn("the OpenCode server's event stream ended; following it again shortly",
			zap.String("server", u.base.Redacted()), zap.Duration("in", pause), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, watchRetryMax)
	}
}

// watchOnce follows the stream once, until it ends.
func (u *Upstream) watchOnce(ctx context.Context) error {
	frames, err := u.Stream(ctx, "/global/event", nil, nil)
	if err != nil {
		return err
	}
	defer frames.Close()
	u.calls.watching.Store(true)
	for first := true; ; first = false {
		frame, err := frames.Next()
		if err != nil {
			return err
		}
		if first {
			u.lists.watching(true) // the server sends its changes from now on
		}
		p, ok := Peek(frame)
		if !ok {
			continue
		}
		u.lists.heard(p.Type)
		switch p.Type {
		case "message.part.updated", "message.part.removed", "session.deleted":
			var envelope struct {
				Payload json.RawMessage `json:"payload"`
			}
			if json.Unmarshal(Data(frame), &envelope) == nil && len(envelope.Payload) > 0 {
				u.calls.observe(envelope.Payload)
			}
		}
	}
}

// streamStartTimeout bounds how long Stream waits for the server's stream
// to start: its answer's header and first bytes (OpenCode sends
// server.connected at once). An OpenCode server that is still starting
// was seen to take the connection and answer nothing, for good: a client
// whose stream waited on it would never hear of either server again (the
// TUI does not time its stream out), where an error has it connect again.
var streamStartTimeout = 10 * time.Second

// errNotStarted is why a stream's request was cancelled after
// streamStartTimeout.
var errNotStarted = errors.New("its event stream did not start")

// Stream opens the server's event stream at path (/event or
// /global/event) with query and header (the client's directory), and
// returns it frame by frame; closing it ends the request. A status other
// than 200 is a *StatusError holding the server's answer; a stream that
// does not start within streamStartTimeout is ErrUnreachable (before its
// header) or the FrameReader's error (before its first bytes).
func (u *Upstream) Stream(ctx context.Context, path string, query url.Values, header http.Header) (*FrameReader, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	started := time.AfterFunc(streamStartTimeout, func() { cancel(errNotStarted) })
	h := http.Header{"Accept": {"text/event-stream"}, "Accept-Encoding": {"identity"}}
	for k, v := range header {
		h[k] = v
	}
	res, err := u.Do(ctx, http.MethodGet, path, query, h)
	if err != nil {
		started.Stop()
		defer cancel(nil)
		if errors.Is(context.Cause(ctx), errNotStarted) {
			return nil, fmt.Errorf("%w: GET %s at %s: %w within %v", ErrUnreachable, path, u.base.Redacted(), errNotStarted, streamStartTimeout)
		}
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		started.Stop()
		defer cancel(nil)
		defer res.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return nil, &StatusError{Status: res.StatusCode, Header: res.Header.Clone(), Body: body}
	}
	return NewFrameReader(&cancelOnClose{ReadCloser: res.Body, cancel: func() { cancel(nil) }, started: started, ctx: ctx}, 0), nil
}

// cancelOnClose ends a request when its body is closed, and stops the
// request's start timer (Stream) at its first bytes.
type cancelOnClose struct {
	io.ReadCloser
	cancel  func()
	started *time.Timer
	ctx     context.Context // the request's: its cause says whether the timer ended it
	begun   bool            // first bytes read (only Read's goroutine touches it)
}

func (c *cancelOnClose) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 && !c.begun {
		c.begun = true
		c.started.Stop()
	}
	if err != nil && !c.begun && errors.Is(context.Cause(c.ctx), errNotStarted) {
		err = fmt.Errorf("%w within %v", errNotStarted, streamStartTimeout)
	}
	return n, err
}

func (c *cancelOnClose) Close() error {
	c.started.Stop()
	c.cancel()
	err := c.ReadCloser.Close()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("closing the server's event stream: %w", err)
	}
	return nil
}
