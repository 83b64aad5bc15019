package sse

import (
	"bytes"
	"net/http"
	"slices"

	"go.uber.org/zap"
)

// frameWriter is the ResponseWriter r3labs writes to. It never touches the
// network: it collects what r3labs writes for one event, turns it into
// OpenCode's framing on Flush and queues it for the subscriber's writer.
// WriteHeader is where a client's own first frames are made, because r3labs
// calls it right after registering the subscriber.
type frameWriter struct {
	sub     *subscriber
	initial func() []Message
	raw     []byte // written by r3labs since its last Flush
	started bool   // WriteHeader(200) happened
	direct  bool   // r3labs answered with an error itself: pass it through
}

var _ http.Flusher = (*frameWriter)(nil)

func (fw *frameWriter) Header() http.Header { return fw.sub.out.Header() }

func (fw *frameWriter) WriteHeader(code int) {
	if fw.started || fw.direct {
		return
	}
	if code != http.StatusOK {
		// We build r3labs' request so that this cannot happen; if it does,
		// the client should see r3labs' answer rather than a stream.
		fw.direct = true
		fw.sub.log.Error("r3labs refused the event stream", zap.Int("status", code))
		fw.sub.out.WriteHeader(code)
		return
	}
	fw.started = true
	// Close publishes its end marker after marking the broker closed. So if
	// the broker is open now, with the subscriber registered, the marker
	// will reach it; otherwise it may have gone by already, so the
	// subscriber ends right after its first frames.
	missedEnd := fw.sub.broker.isClosed()
	setStreamHeaders(fw.sub.out.Header())
	if hook := fw.sub.broker.hooks.registered; hook != nil {
		hook()
	}
	fw.sub.start(fw.sub.broker.prelude(fw.sub, fw.initial))
	if missedEnd {
		fw.sub.finish()
	}
}

func (fw *frameWriter) Write(p []byte) (int, error) {
	if fw.direct {
		return fw.sub.out.Write(p)
	}
	if !fw.started {
		fw.WriteHeader(http.StatusOK)
	}
	// Room for r3labs' closing newline too, so a large event is not copied twice.
	fw.raw = append(slices.Grow(fw.raw, len(p)+1), p...)
	return len(p), nil
}

func (fw *frameWriter) Flush() {
	if fw.direct {
		_ = fw.sub.rc.Flush()
		return
	}
	if len(fw.raw) == 0 {
		return
	}
	if bytes.Equal(fw.raw, endMarker) {
		fw.raw = nil
		fw.sub.finish()
		return
	}
	f := frameFrom(fw.raw)
	fw.raw = nil // the frame may alias it
	if f != nil {
		fw.sub.enqueue(f)
	}
}

// setStreamHeaders replaces r3labs' headers with OpenCode's. r3labs adds
// "Connection: keep-alive", which HTTP/1.1 does not need and HTTP/2 forbids.
func setStreamHeaders(h http.Header) {
	h.Del("Connection")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Type", "text/event-stream")
	h.Del("X-Accel-Buffering")
	h["x-accel-buffering"] = []string{"no"} // spelled as OpenCode sends it; nginx reads it in any case
}
