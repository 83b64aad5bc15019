package bridge

import (
	"bytes"
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// The fast path: between the bridge's own stdio connections, a message the
// relay only passes on goes as its frame came, with its id rewritten as
// fromHost and fromUpstream would (frame.go). Every message the relay acts
// on — initialize, cancellations, progress, elicitations, errors, results
// that may ask for input, anything sniff does not take — goes the full
// path, decoded.

// fastFromHost relays the host's frame, and reports whether it did.
func (r *Relay) fastFromHost(ctx context.Context, frame []byte) (bool, error) {
	up, ok := r.up.(*lineConn)
	if !ok {
		return false, nil
	}
	e, ok := sniff(frame)
	if !ok {
		return false, nil
	}
	switch {
	case e.isNotification():
		if string(e.method) == methodCancelled {
			return false, nil
		}
		return true, up.writeFrame(ctx, frame, -1, -1, noID, false)
	case e.isRequest():
		method := string(e.method)
		if method == methodInitialize || bytes.Contains(e.params, []byte(mcp.MetaKeyClientCapabilities)) {
			return false, nil
		}
		params := e.params
		if retriable[method] {
			params = bytes.Clone(params) // kept beyond the frame's life
		}
		own := r.toUpstream.relay(e.requestID(), method, params)
		return true, up.writeFrame(ctx, frame, e.idAt, e.idEnd, own, false)
	}
	s, ok := r.toHost.answered(e.requestID())
	if !ok {
		r.log.Debug("bridge: a response from the host to no request", zap.ByteString("id", e.id))
		return true, nil
	}
	return true, up.writeFrame(ctx, frame, e.idAt, e.idEnd, s.orig, true)
}

// fastFromUpstream relays the upstream's frame, and reports whether it
// did.
func (r *Relay) fastFromUpstream(ctx context.Context, frame []byte) (bool, error) {
	host, ok := r.host.(*lineConn)
	if !ok {
		return false, nil
	}
	e, ok := sniff(frame)
	if !ok {
		return false, nil
	}
	switch {
	case e.isNotification():
		switch string(e.method) {
		case methodProgress, methodElicitationComplete, methodCancelled:
			return false, nil
		}
		return true, host.writeFrame(ctx, frame, -1, -1, noID, false)
	case e.isRequest():
		method := string(e.method)
		if method == methodElicit {
			return false, nil
		}
		own := r.toHost.relay(e.requestID(), method, nil)
		return true, host.writeFrame(ctx, frame, e.idAt, e.idEnd, own, false)
	}
	if mayAskInput(e.result) {
		return false, nil // inputs.go's (errors, which may require URLs, never come here)
	}
	s, ok := r.toUpstream.answered(e.requestID())
	if !ok {
		r.log.Debug("bridge: a response from the upstream to no request", zap.ByteString("id", e.id))
		return true, nil
	}
	r.settled(s)
	return true, host.writeFrame(ctx, frame, e.idAt, e.idEnd, s.orig, true)
}

// mayAskInput says whether a result might be an input request: its
// resultType's text "input_required" can only be written literally or with
// \u escapes (JSON's other escapes write no letters).
func mayAskInput(result []byte) bool {
	return bytes.Contains(result, []byte("input_required")) || bytes.Contains(result, []byte(`\u`))
}
