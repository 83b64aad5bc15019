package sse

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Reasons logged when a subscriber is cut off.
const (
	reasonQueueFull    = "queue full: the client does not read fast enough"
	reasonWriteTimeout = "write timed out: the client does not read"
)

type subState int

const (
	subActive    subState = iota
	subFinishing          // the broker is closing: write what is queued, then end the stream
	subStopped            // cut off or gone: write nothing more
)

// subscriber is one connected client. r3labs hands it finished frames through
// the frameWriter; they wait in a bounded queue for the subscriber's own
// writer goroutine, which is the only one that writes to the connection. So a
// client that stops reading fills its own queue and is cut off, and r3labs,
// publishers and other clients never wait for it.
type subscriber struct {
	broker *Broker
	scope  scope
	out    http.ResponseWriter
	rc     *http.ResponseController
	cancel context.CancelFunc // ends the r3labs subscription
	log    *zap.Logger
	queue  chan []byte

	finishing  chan struct{} // closed on subFinishing
	stopped    chan struct{} // closed on subStopped
	writerDone chan struct{}
	headerSent bool // writer goroutine only

	mu        sync.Mutex
	state     subState
	started   bool // the writer goroutine runs
	ended     bool // the handler is returning: out is no longer ours to touch
	deadlines bool // out accepts write deadlines
}

func newSubscriber(b *Broker, sc scope, out http.ResponseWriter, cancel context.CancelFunc, log *zap.Logger) *subscriber {
	return &subscriber{
		broker:     b,
		scope:      sc,
		out:        out,
		rc:         http.NewResponseController(out),
		cancel:     cancel,
		log:        log,
		queue:      make(chan []byte, b.opts.QueueLength),
		finishing:  make(chan struct{}),
		stopped:    make(chan struct{}),
		writerDone: make(chan struct{}),
		deadlines:  true,
	}
}

// start runs the writer goroutine; prelude goes out before anything queued.
func (s *subscriber) start(prelude [][]byte) {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	go s.write(prelude)
}

// enqueue queues one frame without ever waiting; a full queue cuts the
// subscriber off.
func (s *subscriber) enqueue(frame []byte) {
	s.mu.Lock()
	if s.state != subActive {
		s.mu.Unlock()
		return
	}
	select {
	case s.queue <- frame:
		s.mu.Unlock()
		return
	default:
	}
	s.mu.Unlock()
	s.cutOff(reasonQueueFull, nil)
}

func (s *subscriber) write(prelude [][]byte) {
	defer close(s.writerDone)
	for _, f := range prelude {
		if !s.send(f) {
			return
		}
	}
	for {
		select {
		case f := <-s.queue:
			if !s.send(f) {
				return
			}
		case <-s.stopped:
			return
		case <-s.finishing:
			for {
				select {
				case f := <-s.queue:
					if !s.send(f) {
						return
					}
				default:
					return
				}
			}
		}
	}
}

// send writes and flushes one frame within the write timeout.
func (s *subscriber) send(frame []byte) bool {
	s.mu.Lock()
	if s.state == subStopped {
		s.mu.Unlock()
		return false
	}
	// Set under mu so that a concurrent halt, which moves the deadline to
	// now, cannot be overwritten by this later one.
	deadline := time.Now().Add(s.broker.opts.WriteTimeout)
	if s.deadlines {
		if err := s.rc.SetWriteDeadline(deadline); err != nil {
			s.deadlines = false
			s.broker.noDeadlines.Do(func() {
				s.log.Warn("the ResponseWriter takes no write deadlines (a middleware hides them?): a stalled client keeps its handler until the connection dies", zap.Error(err))
			})
		}
	}
	s.mu.Unlock()

	if !s.headerSent {
		s.headerSent = true
		s.out.WriteHeader(http.StatusOK)
	}
	_, err := s.out.Write(frame)
	if err == nil {
		err = s.rc.Flush()
	}
	if err == nil {
		return true
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(deadline):
		// Our own deadline passed, rather than a halt moving it. net/http has
		// already cancelled the request, so the handler may have halted s
		// as if the client left: say what really happened.
		s.halt(false)
		s.log.Warn("event subscriber cut off", zap.String("reason", reasonWriteTimeout), zap.Error(err))
	case s.halt(false):
		s.log.Debug("event subscriber gone", zap.Error(err))
	}
	return false
}

// finish lets the writer send what is queued and end; r3labs stops feeding.
func (s *subscriber) finish() {
	s.mu.Lock()
	if s.state == subActive {
		s.state = subFinishing
		close(s.finishing)
	}
	s.mu.Unlock()
	s.cancel()
}

// cutOff stops s at once and says why.
func (s *subscriber) cutOff(reason string, err error) {
	if s.halt(false) {
		s.log.Warn("event subscriber cut off", zap.String("reason", reason), zap.Error(err))
	}
}

// halt moves s to subStopped (only from subActive when onlyActive), wakes a
// write blocked on the connection, and ends the r3labs subscription. It
// reports whether it changed anything.
func (s *subscriber) halt(onlyActive bool) bool {
	s.mu.Lock()
	if s.ended || s.state == subStopped || (onlyActive && s.state != subActive) {
		s.mu.Unlock()
		return false
	}
	s.state = subStopped
	close(s.stopped)
	if s.started && s.deadlines {
		_ = s.rc.SetWriteDeadline(time.Now())
	}
	s.mu.Unlock()
	s.cancel()
	return true
}

// end runs once r3labs has let go of s: it waits for the writer and, on a
// clean end, leaves net/http time to write the end of the response.
func (s *subscriber) end() {
	if s.halt(true) {
		s.log.Debug("event subscriber left")
	}
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.writerDone
	}
	s.mu.Lock()
	s.ended = true
	clean := s.state == subFinishing && s.deadlines
	s.mu.Unlock()
	if clean {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.broker.opts.WriteTimeout))
	}
}
