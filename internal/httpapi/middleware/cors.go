package middleware

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// CORS is a policy that follows OpenCode's CORS rules: its allowlist of origins (local
// pages, the desktop shells, *.opencode.ai) plus configured ones; preflights
// are answered before anything else; the allowed origin is reflected, never
// "*". Unlike OpenCode, a cross-origin write from an origin that is not
// allowed is refused (403) before it reaches a handler, because a browser
// sends simple POSTs without asking first. A page's requests to its own
// origin (the /ui page, wherever questiond is reached) are not cross-origin
// and always pass.
type CORS struct {
	extra map[string]bool
}

var opencodeOrigin = regexp.MustCompile(`^https://([a-z0-9-]+\.)*opencode\.ai$`)

// NewCORS is the policy that also allows origins.
func NewCORS(origins []string) (*CORS, error) {
	p := &CORS{extra: map[string]bool{}}
	for _, o := range origins {
		o = strings.TrimSuffix(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		if o == "*" {
			return nil, fmt.Errorf("CORS origin %q: list origins one by one; a wildcard would let every web page answer questions", o)
		}
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("CORS origin %q: expected scheme://host[:port]", o)
		}
		p.extra[o] = true
	}
	return p, nil
}

// allowed reports whether a page from origin may use the API.
func (p *CORS) allowed(origin string) bool {
	switch origin {
	case "oc://renderer", "tauri://localhost", "http://tauri.localhost", "https://tauri.localhost":
		return true
	}
	if p.extra[origin] || opencodeOrigin.MatchString(origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Path != "" {
		return false
	}
	host := u.Hostname()
	return host == "localhost" || host == "127.0.0.1"
}

// Middleware applies the policy: it answers preflights and refuses
// cross-origin writes from origins it does not allow.
func (p *CORS) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		h := w.Header()
		h.Add("Vary", "Origin")
		ok := origin != "" && p.allowed(origin)
		if ok {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT, PATCH, POST, DELETE")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
			}
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if origin != "" && !ok && !safeMethod(r.Method) && !sameOrigin(r) {
			forbidden(w, "origin "+origin+" may not change questions; allow it with --cors")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether a browser sent r from a page of the origin r
// is addressed to. Browsers say so in Sec-Fetch-Site, which pages cannot
// set; older ones only send Origin, whose host then names the Host the
// request went to (a TLS proxy that keeps Host changes only the scheme). A
// foreign page cannot send its own name as Host: the host guard refuses
// names questiond does not serve.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default:
		return false
	}
	u, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
