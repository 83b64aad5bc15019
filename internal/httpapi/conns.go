package httpapi

import (
	"net"
	"net/http"
	"sync"
)

// SilentConns tracks connections that have not sent a request yet, so a
// shutdown can close them at once: http.Server.Shutdown waits up to five
// seconds for such a connection (a client's spare keep-alive socket) in case
// a request is on its way, and a stopping questiond answers none anyway.
// Set Track as the http.Server's ConnState hook and call CloseAll before
// Shutdown.
type SilentConns struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closing bool // CloseAll was called: a connection accepted now is closed at once
}

// NewSilentConns returns an empty tracker.
func NewSilentConns() *SilentConns { return &SilentConns{conns: make(map[net.Conn]struct{})} }

// Track is an http.Server ConnState hook.
func (f *SilentConns) Track(c net.Conn, state http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case state != http.StateNew:
		delete(f.conns, c)
	case f.closing:
		_ = c.Close()
	default:
		f.conns[c] = struct{}{}
	}
}

// CloseAll closes every connection that has not sent a request, now and
// from now on.
func (f *SilentConns) CloseAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}
