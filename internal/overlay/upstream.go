package overlay

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Options configure an Upstream.
type Options struct {
	// URL is the OpenCode server's base URL (http or https; a path prefix
	// is kept).
	URL string
	// Username and Password are the server's own credentials
	// (OPENCODE_SERVER_USERNAME, default "opencode", and
	// OPENCODE_SERVER_PASSWORD), sent with every request questiond makes
	// or forwards; "" sends none.
	Username, Password string
	// Transport reaches the server; nil means a transport of its own.
	Transport http.RoundTripper
	Logger    *zap.Logger
}

// ErrUnreachable is why a request reached no answer from the server.
var ErrUnreachable = errors.New("the OpenCode server did not answer")

// Upstream is the OpenCode server questiond is in front of.
type Upstream struct {
	base          *url.URL
	authorization string // the Authorization header the server wants, or ""
	transport     http.RoundTripper
	log           *zap.Logger
	sessions      sessionCache
	calls         *calls // the server's tool calls in flight, as its event stream tells them
	lists         questionLists
}

// New checks opts and returns the server they name. Nothing is sent yet.
func New(opts Options) (*Upstream, error) {
	base, err := ParseURL(opts.URL)
	if err != nil {
		return nil, err
	}
	u := &Upstream{base: base, transport: opts.Transport, log: opts.Logger, calls: newCalls()}
	if u.log == nil {
		u.log = zap.NewNop()
	}
	if u.transport == nil {
		u.transport = newTransport()
	}
	u.transport = answerDeadline{u.transport} // every read questiond sends or forwards
	if opts.Password != "" {
		user := opts.Username
		if user == "" {
			user = "opencode"
		}
		u.authorization = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+opts.Password))
	}
	return u, nil
}

// Forwarder forwards each request to the server and its answer back,
// streaming both ways. Hop-by-hop headers stay behind; the client's
// credentials (meant for questiond) are replaced by the server's. A request
// that could not be forwarded (the server is down, the connection broke
// before its answer, a GET or HEAD whose answer did not begin within 30
// seconds) is answered by failed, with an error wrapping ErrUnreachable.
func (u *Upstream) Forwarder(failed func(w http.ResponseWriter, r *http.Request, err error)) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite:   u.rewrite,
		Transport: u.transport,
		// Every answer goes out as it comes: event streams, and the
		// long-held prompt calls whose body trickles.
		FlushInterval: -1,
		ErrorLog:      zap.NewStdLog(u.log.Named("upstream")),
		// A change the server made may have changed its questions: the
		// lists kept go stale before the client hears the answer.
		ModifyResponse: func(res *http.Response) error {
			if changesState(res.Request.Method) {
				u.lists.changed()
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if changesState(r.Method) {
				u.lists.changed() // it may have got there
			}
			if r.Context().Err() != nil {
				return // the client left: nobody to answer
			}
			failed(w, r, fmt.Errorf("%w: %s %s at %s: %v", ErrUnreachable, r.Method, r.URL.Path, u.base.Redacted(), err))
		},
	}
}

// ParseURL reads an OpenCode server's base URL: absolute, http or https,
// with a host, without credentials, a query or a fragment.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return nil, fmt.Errorf("upstream URL %q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("upstream URL %q: want http:// or https://", raw)
	case u.Host == "":
		return nil, fmt.Errorf("upstream URL %q: no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("upstream URL %q: give the server's password in OPENCODE_SERVER_PASSWORD, not in the URL", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("upstream URL %q: no query or fragment", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// URL is the server's base URL.
func (u *Upstream) URL() *url.URL { c := *u.base; return &c }

// rewrite aims a forwarded request at the server.
func (u *Upstream) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(u.base)
	out := pr.Out
	q := out.URL.Query()
	if q.Has("auth_token") { // questiond's credentials, as EventSource clients send them
		q.Del("auth_token")
		out.URL.RawQuery = q.Encode()
	}
	out.Header.Del("Authorization")
	if acceptsEventStream(out.Header) {
		// An event stream goes out as it comes: a compressing server may
		// hold frames back to fill its blocks.
		out.Header.Set("Accept-Encoding", "identity")
	}
	if u.authorization != "" {
		out.Header.Set("Authorization", u.authorization)
	}
}

// acceptsEventStream reports whether a request's Accept names an event
// stream.
func acceptsEventStream(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		if strings.Contains(strings.ToLower(v), "text/event-stream") {
			return true
		}
	}
	return false
}

// Do sends a request questiond makes itself (a list it merges, a session
// it looks up, an event stream it relays) to path on the server, with the
// server's credentials. A response arrives whatever its status; an error
// wraps ErrUnreachable.
func (u *Upstream) Do(ctx context.Context, method, path string, query url.Values, header http.Header) (*http.Response, error) {
	target := *u.base
	target.Path = u.base.Path + path
	target.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, target.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if u.authorization != "" {
		req.Header.Set("Authorization", u.authorization)
	}
	res, err := u.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s at %s: %v", ErrUnreachable, method, path, u.base.Redacted(), err)
	}
	return res, nil
}

// newTransport reaches the server without time limits on answers: a
// prompt call or an event stream is held for as long as it lasts.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil, // the server is local or named directly: no HTTP_PROXY detour
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		// Encodings pass through as the client and the server agree them.
		DisableCompression:    true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
