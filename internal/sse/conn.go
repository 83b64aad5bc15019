package sse

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// An idle stream served the usual way holds its handler's goroutine, and
// with it net/http's per-connection goroutines and buffers: some 26 KiB per
// client. So a stream on an HTTP/1.1 connection takes the connection over:
// it writes the response itself, the handler returns, and what is left per
// idle client is the subscriber, the socket and one small reader goroutine.
// A writer goroutine runs only while frames are queued. The connection
// closes when the stream ends: net/http cannot take it back.

// takeOver hijacks r's connection for s, once the response is certain to be
// a stream, and reports whether it did. It leaves r to the ResponseWriter
// for anything but a plain HTTP/1.1 GET (HTTP/1.0 gets no chunks, a request
// body would have to be read first) or when the connection cannot be taken.
func (s *subscriber) takeOver(w http.ResponseWriter, r *http.Request) bool {
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		return false
	}
	head := responseHead(w.Header(), r.Close)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		if !errors.Is(err, http.ErrNotSupported) {
			s.log(zap.DebugLevel, "event stream served through its handler: the connection could not be taken over", zap.Error(err))
		}
		return false
	}
	// Bytes the client pipelined behind its request stay in the reader
	// net/http returned, dropped here: an event stream answers no second
	// request.
	s.mu.Lock()
	s.conn, s.head = conn, head
	if s.state == subStopped {
		_ = conn.SetDeadline(time.Now()) // cut off while connecting: the reader ends the stream at once
	}
	s.mu.Unlock()
	s.writers.Add(1) // the handler, until the prelude is out
	go s.watch()
	return true
}

// responseHead is the head net/http would write for a stream with header:
// status line, the header sorted by name, Date, Connection: close if the
// client asked for it, and chunked transfer coding.
func responseHead(header http.Header, clientCloses bool) []byte {
	var b headBuffer
	b = append(b, "HTTP/1.1 200 OK\r\n"...)
	_ = header.Write(&b) // a slice takes every write
	if _, ok := header["Date"]; !ok {
		b = append(b, "Date: "...)
		b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
		b = append(b, "\r\n"...)
	}
	if clientCloses {
		b = append(b, "Connection: close\r\n"...)
	}
	return append(b, "Transfer-Encoding: chunked\r\n\r\n"...)
}

type headBuffer []byte

func (b *headBuffer) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

// writeConn writes one frame, after the response head if it is not out yet.
func (s *subscriber) writeConn(conn net.Conn, f []byte) error {
	if s.head != nil {
		f = append(s.head, f...)
		s.head = nil
	}
	_, err := conn.Write(f)
	return err
}

// run writes prelude, then whatever is queued, until the queue is empty
// (then it parks) or the stream ends. It is the writer of a stream in conn
// mode: the handler first, then a goroutine per burst of frames.
func (s *subscriber) run(prelude [][]byte) {
	defer s.writers.Done()
	for _, f := range prelude {
		if !s.write(f) {
			return
		}
	}
	for {
		batch, state := s.take(true)
		switch {
		case state == subStopped:
			return
		case len(batch) == 0 && state == subFinishing:
			s.endCleanly()
			return
		case len(batch) == 0:
			if hook := s.broker.hooks.parked; hook != nil {
				hook()
			}
			return
		}
		for _, f := range batch {
			if !s.write(f) {
				return
			}
		}
		s.written(batch)
	}
}

// unparkLocked starts a writer for a parked stream.
func (s *subscriber) unparkLocked() {
	if !s.parked {
		return
	}
	s.parked = false
	s.writers.Add(1)
	go s.run(nil)
}

// endCleanly ends the response once the broker closed and everything
// queued is out; like net/http's own end of a response, it gets the close
// grace. Then the connection closes.
func (s *subscriber) endCleanly() {
	s.mu.Lock()
	if s.state == subStopped {
		s.mu.Unlock()
		return
	}
	s.setDeadlineLocked(time.Now().Add(s.broker.opts.CloseGrace))
	conn := s.conn
	s.mu.Unlock()
	if err := s.writeConn(conn, lastChunk); err != nil {
		s.failed(err)
		return
	}
	s.mu.Lock()
	s.clean = true
	s.stopLocked()
	s.mu.Unlock()
}

// watch is the reader of a stream in conn mode: a client of an event
// stream sends nothing once its request is in, so anything it reads (data,
// end of file, an error) means the client is gone or misbehaving, or the
// stream was stopped (stopLocked wakes it with a deadline). It then ends
// the stream: once no writer is left, it closes the connection, s leaves
// the broker and the stream's end is reported.
func (s *subscriber) watch() {
	var probe [1]byte
	n, err := s.conn.Read(probe[:])
	switch was := s.stop(); {
	case was == subStopped:
	case n > 0:
		s.log(zap.DebugLevel, "event subscriber sent data after its request: stream closed")
	default:
		s.log(zap.DebugLevel, "event subscriber left", zap.Error(err))
	}
	s.writers.Wait()
	s.mu.Lock()
	clean := s.clean
	s.mu.Unlock()
	closeConn(s.conn, clean)
	s.broker.leave(s)
	if s.onEnd != nil {
		s.onEnd()
	}
}

// closeConn closes conn. A TLS connection that ended cleanly says so
// (close_notify, which may wait for the client up to five seconds); one cut
// off is dropped at once, as its client may not be reading at all.
func closeConn(conn net.Conn, clean bool) {
	if tc, ok := conn.(*tls.Conn); ok && !clean {
		conn = tc.NetConn()
	}
	_ = conn.Close()
}
