package sse

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Feed is a source of whole frames from elsewhere, such as an upstream
// OpenCode server's own event stream, that a stream carries between the
// broker's frames (ServeEventMerged, ServeGlobalMerged).
type Feed interface {
	// Next returns the next frame, exactly as the client is to get it:
	// whole, ended by its blank line (`data: {…}\n\n`), of the stream's
	// kind (/event or /global/event). An empty frame is skipped. Any error
	// ends the stream; io.EOF is the source's clean end.
	Next() ([]byte, error)
	// Close stops the feed: a Next under way returns soon, with an error.
	// The broker calls it exactly once, when the stream is over (from
	// another goroutine than Next's, maybe while Next waits), or when it
	// refuses the stream. The stream's end waits for it, so it must not
	// block for long: cancelling the upstream request and closing its
	// body is what it is for.
	Close() error
}

// Why a merged stream does not start, besides the refusals of a plain one.
var (
	// ErrFeed wraps why the feed gave no first frame: upstream's stream
	// failed or ended before it connected. Nothing was written.
	ErrFeed = errors.New("the stream's feed gave no first frame")
	// ErrGone means the stream ended while it waited for its feed's first
	// frame: the client went away or was cut off. Nothing was written.
	ErrGone = errors.New("the event stream ended before it started")
)

// Reasons logged when a merged stream ends because of its feed.
const (
	reasonFeedEnded  = "the stream's feed ended and the client did not take what was queued in time"
	reasonFeedBroken = "the stream's feed gave a frame that does not end with a blank line"
)

// feedPump reads one stream's feed on a goroutine of its own and queues its
// frames as the broker's are queued: same queue, same bounds, so frames of
// both never mix within a frame and a client that cannot keep up with the
// feed is cut off like any slow client. The pump outlives nothing: the
// stream's end closes the feed and waits for the pump (release).
type feedPump struct {
	feed  Feed
	close func() // feed.Close, once

	ready    chan struct{} // closed once the first frame, or why there is none, is known
	first    []byte        // the first frame, chunked; set before ready is closed
	firstErr error         // set before ready is closed

	done chan struct{} // closed when the pump returned
}

func newFeedPump(feed Feed) *feedPump {
	return &feedPump{
		feed:  feed,
		close: sync.OnceFunc(func() { _ = feed.Close() }),
		ready: make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// pump reads s's feed until it fails or s no longer takes frames. Once the
// first frame is handed over, a feed that ends ends the stream: what is
// queued goes out, then the response ends cleanly, so the client
// reconnects rather than keep a stream that carries one side only.
func (s *subscriber) pump(p *feedPump) {
	defer close(p.done)
	first, err := nextFrame(p.feed)
	p.first, p.firstErr = first, err
	close(p.ready)
	if err != nil {
		return
	}
	for {
		f, err := nextFrame(p.feed)
		if err != nil {
			s.feedEnded(err)
			return
		}
		if s.enqueue(Frame{From: FromFeed, wire: f}, false) {
			s.logCutOff(reasonQueueFull, nil)
			return
		}
		if !s.active() {
			return // ending: the stream's end closes the feed
		}
	}
}

// nextFrame is the feed's next frame that is not empty, chunked.
func nextFrame(feed Feed) ([]byte, error) {
	for {
		f, err := feed.Next()
		switch {
		case err != nil:
			return nil, err
		case len(f) == 0:
			continue
		case !endsFrame(f):
			return nil, errBrokenFrame
		}
		return chunk(f), nil
	}
}

var errBrokenFrame = errors.New(reasonFeedBroken)

// endsFrame reports whether f ends with a blank line: a line end ("\n",
// "\r\n" or "\r") right after another.
func endsFrame(f []byte) bool {
	n := len(f)
	switch {
	case n >= 2 && f[n-2] == '\r' && f[n-1] == '\n':
		n -= 2
	case n >= 1 && (f[n-1] == '\n' || f[n-1] == '\r'):
		n--
	default:
		return false
	}
	return n > 0 && (f[n-1] == '\n' || f[n-1] == '\r')
}

// feedEnded ends s after its feed did: what is queued still goes out,
// within the write timeout.
func (s *subscriber) feedEnded(err error) {
	if errors.Is(err, errBrokenFrame) {
		s.cutOff(reasonFeedBroken, err)
		return
	}
	s.log(zap.DebugLevel, "event stream's feed ended: ending the stream", zap.Error(err))
	s.finish(time.Now().Add(s.broker.opts.WriteTimeout), reasonFeedEnded)
}

// awaitFirst waits for the first frame of s's feed, while s is registered
// and the broker's frames queue up. It returns why the stream cannot start
// when the feed fails first, the client leaves (ctx) or s stops first. A
// first frame that came counts, whatever happened since: the stream then
// starts, and ends as it would have anyway (a feed that ended right after
// its first frame ends it cleanly).
func (s *subscriber) awaitFirst(ctx context.Context) error {
	p := s.feed
	first := func() error {
		if p.firstErr != nil {
			return fmt.Errorf("%w: %w", ErrFeed, p.firstErr)
		}
		return nil
	}
	for {
		select {
		case <-p.ready:
			return first()
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrGone, context.Cause(ctx))
		case <-s.wake:
			// The writer, which also waits on wake, takes the queue first
			// thing anyway: a token taken here is not missed.
		}
		s.mu.Lock()
		state := s.state
		s.mu.Unlock()
		if state == subActive {
			continue
		}
		select {
		case <-p.ready:
			return first()
		default:
		}
		if state == subFinishing {
			return ErrClosed // only the broker finishes a stream whose feed has not started
		}
		return ErrGone
	}
}

// release closes s's feed, if it has one, and waits for its pump: a stream
// never outlives its feed.
func (s *subscriber) release() {
	if s.feed != nil {
		s.feed.close()
		<-s.feed.done
	}
	if s.filter != nil {
		s.filter.stop()
	}
}
