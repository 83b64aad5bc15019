package sse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"go.uber.org/zap"
)

// ServeEvent serves GET /event for directory ("" = every directory) with
// {"id","type","properties"} frames. The first frame is server.connected,
// then the messages returned by initial (called once the subscriber is
// registered, so nothing published afterwards is missed), then live events
// and heartbeats. It returns when the client goes away or the broker closes.
//
// initial runs on the request's goroutine while live events for the new
// subscriber already pile up in r3labs (64 of them before r3labs waits for
// it, and with it every publisher of the stream): keep it quick. Messages it
// returns that do not belong to the scope are skipped.
// A closed broker, or a new directory beyond Options.MaxScopes, gets 503.
func (b *Broker) ServeEvent(w http.ResponseWriter, r *http.Request, directory string, initial func() []Message) {
	b.serve(w, r, scope{directory: directory}, initial)
}

// ServeGlobal serves GET /global/event with {"directory","project","payload"}
// frames (server.connected and server.heartbeat carry only "payload"), the
// same way as ServeEvent.
func (b *Broker) ServeGlobal(w http.ResponseWriter, r *http.Request, initial func() []Message) {
	b.serve(w, r, scope{global: true}, initial)
}

func (b *Broker) serve(w http.ResponseWriter, r *http.Request, sc scope, initial func() []Message) {
	if _, ok := w.(http.Flusher); !ok {
		b.log.Error("event stream refused: the ResponseWriter cannot flush (every middleware on a stream must keep http.Flusher)",
			zap.Stringer("scope", sc), zap.String("writer", fmt.Sprintf("%T", w)))
		writeJSONError(w, http.StatusInternalServerError, "UnknownError", "streaming is not supported on this connection")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sub := newSubscriber(b, sc, w, cancel, b.log.With(zap.Stringer("scope", sc), zap.String("remote", r.RemoteAddr)))
	stream, err := b.join(sub)
	if err != nil {
		level := zap.WarnLevel
		if errors.Is(err, ErrClosed) {
			level = zap.DebugLevel // shutting down: expected
		}
		b.log.Log(level, "event stream refused", zap.Stringer("scope", sc), zap.Error(err))
		writeJSONError(w, http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())
		return
	}
	defer b.leave(sub)
	sub.log.Debug("event subscriber joined")
	b.srv.ServeHTTP(&frameWriter{sub: sub, initial: initial}, r3labsRequest(ctx, r, stream))
	sub.end()
}

// r3labsRequest is r as r3labs must see it: our stream whatever the client
// asked for, no Last-Event-ID (r3labs answers 400 to one that is not a number,
// and there is nothing to replay), and a context the subscriber can cancel.
func r3labsRequest(ctx context.Context, r *http.Request, stream string) *http.Request {
	req := r.Clone(ctx)
	q := req.URL.Query()
	q.Set("stream", stream)
	req.URL.RawQuery = q.Encode()
	req.Header.Del("Last-Event-ID")
	return req
}

// prelude is what sub gets before any live event: server.connected, then
// the messages initial returns.
func (b *Broker) prelude(sub *subscriber, initial func() []Message) [][]byte {
	connected, err := b.frameFor(sub.scope, Message{Event: brokerEvent(typeConnected)})
	if err != nil {
		panic(fmt.Sprintf("sse: encoding %s: %v", typeConnected, err)) // a fixed event always encodes
	}
	frames := [][]byte{connected}
	if initial == nil {
		return frames
	}
	for _, m := range initial() {
		if !sub.scope.accepts(m.Directory) {
			continue
		}
		f, err := b.frameFor(sub.scope, m)
		if err != nil {
			sub.log.Error("initial event skipped", zap.Error(err))
			continue
		}
		frames = append(frames, f)
	}
	return frames
}

// frameFor is the frame of m on a stream of sc.
func (b *Broker) frameFor(sc scope, m Message) ([]byte, error) {
	if err := prepare(&m.Event); err != nil {
		return nil, err
	}
	event, err := encodeEvent(m.Event)
	if err != nil {
		return nil, err
	}
	if sc.global {
		return frame(encodeGlobal(m.Directory, b.opts.Project, event)), nil
	}
	return frame(event), nil
}

// writeJSONError answers in OpenCode's error shape.
func writeJSONError(w http.ResponseWriter, status int, name, message string) {
	type data struct {
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		Name string `json:"name"`
		Data data   `json:"data"`
	}{name, data{message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
