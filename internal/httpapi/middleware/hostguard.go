package middleware

import (
	"net"
	"net/http"
	"strings"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// hostGuard refuses requests whose Host names a server questiond is not
// (421), which is what a DNS-rebinding page sends: its own name, now
// resolving to 127.0.0.1. Accepted: localhost, loopback and unspecified-bind
// IP literals, the listen address's host, and configured names.
type hostGuard struct {
	listenHost string // from the listen address; "" or an unspecified IP means every interface
	names      map[string]bool
}

func newHostGuard(listenAddr string, allowed []string) *hostGuard {
	g := &hostGuard{names: map[string]bool{"localhost": true}}
	if host, _, err := net.SplitHostPort(listenAddr); err == nil {
		g.listenHost = strings.ToLower(host)
	} else {
		g.listenHost = strings.ToLower(listenAddr)
	}
	for _, name := range allowed {
		if name = strings.ToLower(strings.TrimSpace(name)); name != "" {
			g.names[strings.TrimSuffix(name, ".")] = true
		}
	}
	return g
}

func (g *hostGuard) allows(hostport string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: nothing a browser sends
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if g.names[host] || host == g.listenHost {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false // a name nobody configured: the rebinding case
	}
	if ip.IsLoopback() {
		return true
	}
	listen := net.ParseIP(g.listenHost)
	// Bound to every interface: any of the machine's addresses may be used,
	// and an IP literal cannot be rebound by DNS.
	return g.listenHost == "" || (listen != nil && listen.IsUnspecified())
}

func (g *hostGuard) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.allows(r.Host) {
			wire.WriteStatus(w, wire.NewStatus(http.StatusMisdirectedRequest, "MisdirectedRequest",
				"Host "+r.Host+" is not served here; add it with --allowed-hosts if it is a name of this server"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HostGuard is the host guard of a listener of questiond's (the API's, the
// metrics'): Host headers of listenAddr, loopback, IP literals when it
// listens on every interface, and allowed names pass; others get 421.
func HostGuard(listenAddr string, allowed []string) func(http.Handler) http.Handler {
	return newHostGuard(listenAddr, allowed).middleware
}
