package sse

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"
)

// ServeEvent serves GET /event for directory ("" = every directory) with
// {"id","type","properties"} frames, to a stream of kind audience (Standard
// or Console: it gets messages for Everyone and for its own kind). The first frame is server.connected,
// then the messages returned by initial (called once the subscriber is
// registered, so nothing published afterwards is missed), then live events
// and heartbeats. The stream ends when the client goes away, is cut off, or
// the broker closes. On an HTTP/1.1 connection ServeEvent takes the
// connection over and returns once the first frames are out, and the
// stream goes on without it (its end: see WithStreamEnd); otherwise it
// returns when the stream ends.
//
// initial runs on the request's goroutine without any broker lock, while live
// events for the new subscriber queue up (a full queue cuts it off, as for
// any slow client). Messages it returns that do not belong to the scope are
// skipped.
//
// A stream it refuses gets nothing written: ServeEvent returns why, and the
// caller answers the request — ErrClosed (the broker closed),
// ErrTooManyScopes (a new directory beyond Options.MaxScopes) or
// ErrCannotFlush. Once the stream started it returns nil.
func (b *Broker) ServeEvent(w http.ResponseWriter, r *http.Request, directory string, audience Audience, initial func() []Message) error {
	return b.serve(w, r, scope{directory: directory, audience: streamKind(audience)}, initial, nil)
}

// ServeGlobal serves GET /global/event with {"directory","project","payload"}
// frames (server.connected and server.heartbeat carry only "payload"), the
// same way as ServeEvent, refusals included.
func (b *Broker) ServeGlobal(w http.ResponseWriter, r *http.Request, audience Audience, initial func() []Message) error {
	return b.serve(w, r, scope{global: true, audience: streamKind(audience)}, initial, nil)
}

// ServeEventMerged is ServeEvent for a stream that also carries feed's
// frames (upstream OpenCode's /event, relayed), each whole, between the
// broker's own; feed's frames must be /event frames. The stream starts with
// feed's first frame (upstream's server.connected: the broker sends none of
// its own), then the messages returned by initial, then live events and
// feed's frames as they come, in one queue with the bounds of any stream: a
// client that cannot keep up with both is cut off. The broker's heartbeats
// go on it as on any stream, besides whatever the feed sends: a client is
// owed questiond's period. The stream ends, cleanly after
// what is queued, when feed ends or fails, so that the client reconnects;
// and when the client goes away, is cut off or the broker closes, feed is
// closed. No goroutine outlives the stream.
//
// The broker owns feed from the call on and closes it exactly once, also
// when it refuses the stream. As the stream may outlive the handler (see
// ServeEvent), feed must not depend on r's context: Close is what stops it.
// Besides ServeEvent's refusals, it returns, with nothing written: ErrFeed
// (wrapping feed's error) when feed fails before its first frame, ErrGone
// when the client leaves or is cut off while the broker waits for it, and
// ErrClosed when the broker closes meanwhile.
func (b *Broker) ServeEventMerged(w http.ResponseWriter, r *http.Request, directory string, audience Audience, initial func() []Message, feed Feed) error {
	return b.serve(w, r, scope{directory: directory, audience: streamKind(audience)}, initial, feed)
}

// ServeGlobalMerged is ServeGlobal for a stream that also carries feed's
// /global/event frames, as ServeEventMerged does for /event.
func (b *Broker) ServeGlobalMerged(w http.ResponseWriter, r *http.Request, audience Audience, initial func() []Message, feed Feed) error {
	return b.serve(w, r, scope{global: true, audience: streamKind(audience)}, initial, feed)
}

// streamKind is the kind of a stream opened for audience: a stream is
// either a console's or not, so Everyone means Standard here.
func streamKind(audience Audience) Audience {
	if audience == Console {
		return Console
	}
	return Standard
}

// serve serves one stream of sc; feed is nil for a stream of the broker's
// frames only.
func (b *Broker) serve(w http.ResponseWriter, r *http.Request, sc scope, initial func() []Message, feed Feed) error {
	onEnd, _ := r.Context().Value(streamEndKey{}).(func())
	kept := false // the stream outlives this call: it calls onEnd itself
	var pump *feedPump
	if feed != nil {
		pump = newFeedPump(feed)
	}
	joined := false // from then on, leaving closes the feed
	defer func() {
		if pump != nil && !joined {
			pump.close()
		}
		if !kept && onEnd != nil {
			onEnd()
		}
	}()
	if _, ok := w.(http.Flusher); !ok {
		return fmt.Errorf("%w (%T; every middleware on a stream must keep http.Flusher)", ErrCannotFlush, w)
	}
	s := newSubscriber(b, sc, w, r.RemoteAddr)
	s.feed = pump
	if newFilter := filterOf(r); newFilter != nil {
		s.filter = newStreamFilter(s, newFilter)
	}
	if err := b.join(s); err != nil {
		if s.filter != nil {
			s.filter.stop()
		}
		level := zap.WarnLevel
		if errors.Is(err, ErrClosed) {
			level = zap.DebugLevel // shutting down: expected
		}
		b.log.Log(level, "event stream refused", zap.Stringer("scope", sc), zap.Error(err))
		return err
	}
	joined = true
	s.log(zap.DebugLevel, "event subscriber joined")
	if hook := b.hooks.registered; hook != nil {
		hook()
	}
	var first []byte
	if pump != nil {
		go s.pump(pump)
		if hook := b.hooks.pumping; hook != nil {
			hook()
		}
		if err := s.awaitFirst(r.Context()); err != nil {
			b.leave(s)
			s.log(zap.DebugLevel, "merged event stream not started", zap.Error(err))
			return err
		}
		first = pump.first
	}
	setStreamHeaders(w.Header())
	s.onEnd = onEnd
	if s.takeOver(w, r) {
		kept = true
		s.run(s.filteredPrelude(b.prelude(s.scope, first, initial)))
		return nil
	}
	defer b.leave(s)
	s.stream(r.Context(), s.filteredPrelude(b.prelude(s.scope, first, initial)))
	return nil
}

// WithStreamEnd returns r carrying end, which the broker serving r as an
// event stream calls exactly once, when the stream is over, even one it
// refused. That can be long after ServeEvent or ServeGlobal returned: a
// stream on an HTTP/1.1 connection lives on without its handler. Whoever
// counts open streams must count them until end.
func WithStreamEnd(r *http.Request, end func()) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), streamEndKey{}, end))
}

type streamEndKey struct{}

// stream writes prelude, then whatever is queued, until the client goes
// away, s is cut off, or the broker closed and s's queue is empty.
func (s *subscriber) stream(ctx context.Context, prelude [][]byte) {
	for _, f := range prelude {
		if !s.write(f) {
			return
		}
	}
	for {
		batch, state := s.take(false)
		if state == subStopped {
			return
		}
		for _, f := range batch {
			if !s.write(f) {
				return
			}
		}
		if len(batch) > 0 {
			s.written(batch)
			continue
		}
		if state == subFinishing {
			return // clean end: the broker closed and everything queued is out
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			s.log(zap.DebugLevel, "event subscriber left")
			return
		}
	}
}

// prelude is what a subscriber of sc gets before any live event:
// server.connected (or, on a merged stream, its feed's first frame), then
// the messages initial returns.
func (b *Broker) prelude(sc scope, first []byte, initial func() []Message) []Frame {
	out := []Frame{{From: FromFeed, wire: first}}
	if first == nil {
		connected, err := b.frameFor(sc, Message{Event: brokerEvent(typeConnected)})
		if err != nil {
			panic(fmt.Sprintf("sse: encoding %s: %v", typeConnected, err)) // a fixed event always encodes
		}
		out[0] = Frame{From: FromBroker, wire: connected}
	}
	if initial == nil {
		return out
	}
	for _, m := range initial() {
		if !sc.accepts(m) {
			continue
		}
		f, err := b.frameFor(sc, m)
		if err != nil {
			b.log.Error("initial event skipped", zap.Stringer("scope", sc), zap.Error(err))
			continue
		}
		out = append(out, Frame{From: FromBroker, Note: m.Note, wire: f})
	}
	return out
}

// setStreamHeaders sets OpenCode's stream headers.
func setStreamHeaders(h http.Header) {
	h.Del("Connection") // HTTP/1.1 does not need it and HTTP/2 forbids it
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", "text/event-stream")
	h.Del("X-Accel-Buffering")
	h["x-accel-buffering"] = []string{"no"} // spelled as OpenCode sends it; nginx reads it in any case
}
