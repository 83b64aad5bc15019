package sse

import (
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Reasons logged when a subscriber is cut off.
const (
	reasonQueueFull    = "queue full: the client does not read fast enough"
	reasonWriteTimeout = "write timed out: the client does not read"
	reasonCloseGrace   = "broker closed and the client did not take what was queued in time"
	reasonClosed       = "broker closed before the stream drained"
)

type subState int

const (
	subActive    subState = iota
	subFinishing          // the broker is closing: write what is queued, then end the stream
	subStopped            // cut off or gone: write nothing more
)

// recycleCap is the largest queue slice kept for reuse once written, so a
// busy subscriber does not allocate one per event while an idle one holds
// little.
const recycleCap = 16

// subscriber is one connected client. Publishers append frames to its queue
// and wake its writer, the only goroutine that writes to the client. The
// queue grows on demand up to Options.QueueLength frames and QueueBytes
// bytes, so an idle subscriber costs a few hundred bytes.
//
// A subscriber is served one of two ways. On an HTTP/1.1 connection it takes
// over (conn mode, see conn.go), its handler returns once the prelude is
// out, and a writer goroutine runs only while something is queued; a reader
// goroutine notices the client leaving. Otherwise (HTTP/2, a ResponseWriter
// that cannot hijack) the request's goroutine is the writer for the whole
// stream and waits on wake between frames.
type subscriber struct {
	broker *Broker
	scope  scope
	remote string
	out    http.ResponseWriter
	rc     *http.ResponseController
	wake   chan struct{} // one slot: something was queued, or the state changed
	onEnd  func()        // see WithStreamEnd; conn mode calls it, nil otherwise
	feed   *feedPump     // a merged stream's feed (feed.go); nil for the broker's frames only
	filter *streamFilter // see WithFilter; nil for a stream that gets every frame as it comes

	headerSent bool   // the writer only
	head       []byte // conn mode, the writer only: the response head, sent with the first frame

	// writers counts the goroutines that may write to conn (at most one
	// at a time); the reader waits for them before the stream is gone.
	writers sync.WaitGroup

	mu        sync.Mutex
	state     subState
	queue     [][]byte
	queued    int       // bytes in queue
	taken     int       // frames of the batch being written; they count against the bounds
	takenSize int       // bytes of the batch being written
	deadline  time.Time // the write deadline last set
	finishBy  time.Time // when subFinishing: the end of the close grace
	finishWhy string    // when subFinishing: what a write that misses finishBy is logged as
	deadlines bool      // out accepts write deadlines
	ended     bool      // the handler is returning: out is no longer ours to touch
	conn      net.Conn  // conn mode: the connection taken over; set once, closed by the reader
	clean     bool      // conn mode: the response ended with its last chunk
	parked    bool      // conn mode: no writer runs; the next frame or state change starts one
}

func newSubscriber(b *Broker, sc scope, w http.ResponseWriter, remote string) *subscriber {
	return &subscriber{
		broker:    b,
		scope:     sc,
		remote:    remote,
		out:       w,
		rc:        http.NewResponseController(w),
		wake:      make(chan struct{}, 1),
		deadlines: true,
	}
}

func (s *subscriber) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// enqueue queues one frame without ever waiting and reports whether it cut
// the subscriber off because its queue is full. A heartbeat is only queued
// to an idle subscriber: a busy one shows it is alive anyway; a merged
// stream gets them too, on questiond's --heartbeat, besides its feed's own
// (clients count on the period they were told, not on upstream's). A
// filtered stream queues what its filter lets through.
func (s *subscriber) enqueue(f Frame, heartbeat bool) (cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch held := len(s.queue) + s.taken; {
	case s.state != subActive, heartbeat && held > 0:
		return false
	case s.filter != nil && !heartbeat:
		return s.queueAllLocked(s.filter.filter.Admit(f))
	}
	return s.queueLocked(f.wire)
}

// queueLocked queues f within the bounds, or cuts s off and says so.
func (s *subscriber) queueLocked(f []byte) (cut bool) {
	held := len(s.queue) + s.taken
	size := s.queued + s.takenSize
	if held >= s.broker.opts.QueueLength || held > 0 && size+len(f) > s.broker.opts.QueueBytes {
		s.stopLocked()
		return true
	}
	s.queue = append(s.queue, f)
	s.queued += len(f)
	s.notify()
	s.unparkLocked()
	return false
}

// take hands the queued frames to the writer. In conn mode, a writer that
// finds nothing to do while the stream goes on parks: it must return then,
// and the next enqueue starts another.
func (s *subscriber) take(park bool) ([][]byte, subState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == subStopped {
		return nil, subStopped
	}
	batch := s.queue
	s.queue = nil
	s.taken, s.takenSize = len(batch), s.queued
	s.queued = 0
	if park && len(batch) == 0 && s.state == subActive {
		s.parked = true
	}
	return batch, s.state
}

// written releases a batch the writer is done with.
func (s *subscriber) written(batch [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken, s.takenSize = 0, 0
	if s.queue == nil && cap(batch) <= recycleCap {
		clear(batch)
		s.queue = batch[:0]
	}
}

// active reports whether s still takes frames.
func (s *subscriber) active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == subActive
}

// finish lets the subscriber write what is queued, by the time by at the
// latest, then end its stream; a client that does not take it in time is
// cut off, logged with reason.
func (s *subscriber) finish(by time.Time, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != subActive {
		return
	}
	s.state = subFinishing
	s.finishBy, s.finishWhy = by, reason
	if s.deadline.After(by) {
		s.setDeadlineLocked(by) // a write under way gets the grace, not more
	}
	s.notify()
	s.unparkLocked() // to end the stream
}

// cutOff stops s at once and says why.
func (s *subscriber) cutOff(reason string, err error) {
	if s.stop() != subStopped {
		s.logCutOff(reason, err)
	}
}

// stop is stopLocked under s.mu; it returns the state s was in, so that
// only whoever stopped it says why.
func (s *subscriber) stop() (was subState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was = s.state
	s.stopLocked()
	return was
}

// stopLocked moves s to subStopped and wakes its writer, even one blocked
// in a write, which then fails at once. In conn mode it wakes the reader
// too, which ends the stream; it does not close the connection itself, as
// closing a TLS connection may write, and stopLocked never waits.
func (s *subscriber) stopLocked() {
	if s.state == subStopped {
		return
	}
	s.state = subStopped
	s.queue, s.queued = nil, 0
	if s.conn != nil {
		_ = s.conn.SetDeadline(time.Now()) // fails only once closed
	} else {
		s.setDeadlineLocked(time.Now())
	}
	s.notify()
}

func (s *subscriber) setDeadlineLocked(t time.Time) {
	if s.ended || !s.deadlines {
		return
	}
	s.deadline = t
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(t) // fails only once closed, and so does the write
		return
	}
	// Any other error means the connection is gone, and the write fails.
	if err := s.rc.SetWriteDeadline(t); errors.Is(err, http.ErrNotSupported) {
		s.deadlines = false
		s.broker.noDeadlines.Do(func() {
			s.broker.log.Warn("the ResponseWriter takes no write deadlines (a middleware hides them?): a stalled client keeps its handler until the connection dies", zap.Error(err))
		})
	}
}

// write writes and flushes one frame within the write timeout (or what is
// left of the close grace) and reports whether the stream goes on.
func (s *subscriber) write(f []byte) bool {
	s.mu.Lock()
	if s.state == subStopped {
		s.mu.Unlock()
		return false
	}
	deadline := time.Now().Add(s.broker.opts.WriteTimeout)
	if s.state == subFinishing && s.finishBy.Before(deadline) {
		deadline = s.finishBy
	}
	// Under mu, so that a concurrent cut-off, which moves the deadline to
	// now, cannot be overwritten by this later one.
	s.setDeadlineLocked(deadline)
	conn := s.conn
	s.mu.Unlock()

	var err error
	if conn != nil {
		err = s.writeConn(conn, f)
	} else {
		err = s.writeResponse(f)
	}
	if err != nil {
		s.failed(err)
		return false
	}
	return true
}

// writeResponse writes f through the ResponseWriter, which frames it.
func (s *subscriber) writeResponse(f []byte) error {
	if !s.headerSent {
		s.headerSent = true
		s.out.WriteHeader(http.StatusOK)
	}
	if _, err := s.out.Write(payload(f)); err != nil {
		return err
	}
	return s.rc.Flush()
}

// failed stops s after a failed write and says why, unless whoever stopped
// it first already did.
func (s *subscriber) failed(err error) {
	s.mu.Lock()
	was, why := s.state, s.finishWhy
	s.stopLocked()
	s.mu.Unlock()
	switch {
	case was == subStopped:
	case !errors.Is(err, os.ErrDeadlineExceeded):
		s.log(zap.DebugLevel, "event subscriber gone", zap.Error(err))
	case was == subFinishing:
		s.logCutOff(why, err)
	default:
		s.logCutOff(reasonWriteTimeout, err)
	}
}

// end runs as the stream is over: its handler returns (after a clean
// finish, net/http still writes the end of the response: it gets the close
// grace too), or, in conn mode, its connection is closed.
func (s *subscriber) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == subFinishing {
		s.setDeadlineLocked(time.Now().Add(s.broker.opts.CloseGrace))
	}
	s.ended = true
	s.state = subStopped
	s.queue, s.queued = nil, 0
}

// log says something about s, naming its scope and client.
func (s *subscriber) log(level zapcore.Level, msg string, fields ...zap.Field) {
	if ce := s.broker.log.Check(level, msg); ce != nil {
		ce.Write(append([]zap.Field{zap.Stringer("scope", s.scope), zap.String("remote", s.remote)}, fields...)...)
	}
}

// logCutOff is called once per subscriber cut off, which is also what
// Stats counts.
func (s *subscriber) logCutOff(reason string, err error) {
	s.broker.cutOff.Add(1)
	s.log(zap.WarnLevel, "event subscriber cut off", zap.String("reason", reason), zap.Error(err))
}
