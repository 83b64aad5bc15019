package connguard

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Handler puts next behind the body read deadline. A request with a body
// gets Options.BodyReadTimeout from its headers to send all of it: the
// connection's read deadline is armed for that time and cleared as soon as
// the body has arrived, so what the handler does next (an event stream, a
// long wait) is not cut. A body that times out ends the request: whatever
// next answers is replaced by 408 naming --body-read-timeout, and the
// connection is closed. An answer given before the body has arrived says
// "Connection: close", and the connection is closed without reading the
// rest.
func (g *Guard) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := connFrom(r.Context())
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			if c != nil {
				g.setAnswering(c)
			}
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(g.opts.BodyReadTimeout))
		body := &deadlineBody{ReadCloser: r.Body, arrived: func() {
			// net/http's HTTP/1 server clears it too as it starts watching
			// for the client going away; an HTTP/2 stream's is its own.
			_ = rc.SetReadDeadline(time.Time{})
			if c != nil {
				g.setAnswering(c)
			}
		}}
		r.Body = body
		bw := &bodyWriter{ResponseWriter: w, body: body, http1: r.ProtoMajor == 1, timeout: g.opts.BodyReadTimeout}
		next.ServeHTTP(bw, r)
		switch {
		case body.timedOut() && !bw.wrote:
			bw.WriteHeader(http.StatusRequestTimeout) // answered as a timeout
		case !body.done():
			// Whatever is left of the body is not read: the connection
			// closes after the answer, at once.
			_ = rc.SetReadDeadline(time.Now())
		}
		if bw.replaced {
			g.counts.bodyTimeout.Add(1)
		}
	})
}

// deadlineBody reports when a request body has arrived in full, or timed
// out.
type deadlineBody struct {
	io.ReadCloser
	arrived func()

	mu       sync.Mutex
	eof      bool
	deadline bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.eof || b.deadline:
	case errors.Is(err, io.EOF):
		b.eof = true
		b.arrived()
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.deadline = true
	}
	return n, err
}

// drain discards up to limit bytes of what is left and reports whether the
// body ended. A read that runs into the deadline here does not make the
// body a timed-out one: the answer is already the handler's.
func (b *deadlineBody) drain(limit int64) bool {
	n, err := io.Copy(io.Discard, io.LimitReader(b.ReadCloser, limit+1))
	if err != nil || n > limit {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.eof {
		b.eof = true
		b.arrived()
	}
	return true
}

func (b *deadlineBody) done() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

func (b *deadlineBody) timedOut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.deadline
}

// bodyWriter closes the connection after an answer given before the body
// arrived, and turns the answer to a body that timed out into a 408. It
// keeps Flush, and Unwrap for http.ResponseController.
type bodyWriter struct {
	http.ResponseWriter
	body    *deadlineBody
	http1   bool
	timeout time.Duration

	wrote    bool // the head is written
	replaced bool // the head is the 408: the handler's own answer is dropped
}

func (w *bodyWriter) WriteHeader(code int) {
	if w.wrote {
		if !w.replaced {
			w.ResponseWriter.WriteHeader(code)
		}
		return
	}
	if code >= 100 && code < 200 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.wrote = true
	if w.http1 && !w.body.done() && !w.drainArrived() {
		w.Header().Set("Connection", "close")
	}
	if !w.body.timedOut() {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.replaced = true
	h := w.Header()
	for k := range h {
		if k != "Connection" {
			delete(h, k)
		}
	}
	msg := fmt.Sprintf(`{"name":"RequestTimeout","data":{"message":"the request body did not arrive within %s (%s)"}}`, w.timeout, FlagBodyReadTimeout)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(msg)))
	w.ResponseWriter.WriteHeader(http.StatusRequestTimeout)
	_, _ = io.WriteString(w.ResponseWriter, msg)
}

// drainArrived reads what is left of the body when it has already arrived
// (up to maxDrain bytes, waiting at most drainWait for more), and reports
// whether it came to its end. An ordinary client sends a small body with its
// headers: its connection stays open, as OpenCode's would, when the answer
// does not need the body (a 404 for an unknown question). A body still on its
// way is not waited for: the connection closes after the answer instead.
func (w *bodyWriter) drainArrived() bool {
	rc := http.NewResponseController(w.ResponseWriter)
	if rc.SetReadDeadline(time.Now().Add(drainWait)) != nil {
		return false
	}
	if w.body.drain(maxDrain) {
		return true // arrived() cleared the deadline
	}
	_ = rc.SetReadDeadline(time.Time{}) // the answer is written on a healthy connection
	return false
}

// What drainArrived reads at most: net/http's own bound for discarding an
// unread body, and a wait that lets bytes already in flight on loopback land.
const (
	maxDrain  = 256 << 10
	drainWait = 5 * time.Millisecond
)

func (w *bodyWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.replaced {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *bodyWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *bodyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
