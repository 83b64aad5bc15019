package main

import (
	"net"
	"net/http"
	"sync"
)

// freshConns tracks connections that have not sent a request yet, so a
// shutdown can close them at once: http.Server.Shutdown waits up to five
// seconds for such a connection (a client's spare keep-alive socket) in case
// a request is on its way, and a stopping questiond answers none anyway.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newFreshConns() *freshConns { return &freshConns{conns: make(map[net.Conn]struct{})} }

// track is an http.Server ConnState hook.
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if state == http.StateNew {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

// closeAll closes every connection that has not sent a request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}
