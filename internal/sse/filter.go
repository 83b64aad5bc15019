package sse

import (
	"context"
	"net/http"
	"sync"
)

// Source is where a frame of a stream comes from.
type Source uint8

const (
	// FromBroker is a frame of questiond's own events (Publish, or a
	// stream's initial messages).
	FromBroker Source = iota
	// FromFeed is a frame of a merged stream's feed (upstream's stream).
	FromFeed
)

// Frame is one frame of a filtered stream, as its Filter sees it: whole,
// as the client is to get it. A Filter passes frames on, holds them to
// pass later, or drops them; it cannot make new ones.
type Frame struct {
	From Source
	Note string // the Message's Note; "" for a feed's frame
	wire []byte // chunked as it is queued
}

// Text is the frame as the client gets it (`data: …\n\n`). It is shared:
// never change it.
func (f Frame) Text() []byte { return payload(f.wire) }

// Filter decides, for one stream, which frames go out and when: every
// frame meant for the stream, from either source, in the order they are
// queued, passes through Admit first (the stream's first frames too).
// Frames it holds go out when it hands them back from Due.
//
// Locks: Admit and Due run holding the subscriber's mu (so the frames
// they return are queued in the order decided), after the Broker's mu
// when a Publish is under way: they must not block (no I/O), and they must
// not call wake. A Filter's own lock comes after the subscriber's. wake,
// which takes the subscriber's mu to call Due, must be called holding none
// of the Filter's locks, from a goroutine of its own (a timer's, say).
type Filter interface {
	// Admit returns the frames to queue now: f, frames held before, both
	// or none.
	Admit(f Frame) []Frame
	// Due returns held frames that may go out now; the stream calls it
	// when the filter called wake.
	Due() []Frame
	// Stop runs once the stream is over, holding no lock: the filter
	// stops its timers and goroutines and waits for them. No Admit or Due
	// follows, though a wake under way may still run (it finds the stream
	// over).
	Stop()
}

// NewFilter makes the Filter of one stream; wake is how the filter asks
// for Due to be called.
type NewFilter func(wake func()) Filter

// WithFilter returns r carrying newFilter: the broker serving r as an
// event stream passes every frame of it through a filter newFilter makes
// for it.
func WithFilter(r *http.Request, newFilter NewFilter) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), filterKey{}, newFilter))
}

type filterKey struct{}

// filterOf is the NewFilter r carries, or nil.
func filterOf(r *http.Request) NewFilter {
	f, _ := r.Context().Value(filterKey{}).(NewFilter)
	return f
}

// streamFilter is a subscriber's filter and what runs it.
type streamFilter struct {
	filter Filter
	stop   func() // filter.Stop, once
}

func newStreamFilter(s *subscriber, make NewFilter) *streamFilter {
	sf := &streamFilter{}
	sf.filter = make(s.released)
	sf.stop = sync.OnceFunc(sf.filter.Stop)
	return sf
}

// released queues what s's filter holds and may go out now.
func (s *subscriber) released() {
	s.mu.Lock()
	cut := s.state == subActive && s.queueAllLocked(s.filter.filter.Due())
	s.mu.Unlock()
	if cut {
		s.logCutOff(reasonQueueFull, nil)
	}
}

// queueAllLocked queues fs, within the bounds, and reports whether that
// cut s off.
func (s *subscriber) queueAllLocked(fs []Frame) (cut bool) {
	for _, f := range fs {
		if s.queueLocked(f.wire) {
			return true
		}
	}
	return false
}

// filteredPrelude passes a stream's first frames through its filter. Live
// frames may have passed before them (they queue while the first frames
// are made): a filter must take frames of one question in either order.
func (s *subscriber) filteredPrelude(prelude []Frame) [][]byte {
	out := make([][]byte, 0, len(prelude))
	if s.filter == nil {
		for _, f := range prelude {
			out = append(out, f.wire)
		}
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range prelude {
		for _, g := range s.filter.filter.Admit(f) {
			out = append(out, g.wire)
		}
	}
	return out
}

// NewFrame makes a frame of text (`data: …\n\n`) from from, as a stream
// would queue it: for a filter that sends a frame of its own (overlay's
// gate withdraws a question from the TUI) and for tests of filters.
func NewFrame(from Source, note string, text []byte) Frame {
	return Frame{From: from, Note: note, wire: chunk(text)}
}
