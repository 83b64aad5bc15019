package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults for Options.
const (
	DefaultServer     = "http://127.0.0.1:4097"
	DefaultPollWait   = 30 * time.Second
	DefaultMaxBackoff = 10 * time.Second
)

// Environment variables New reads when Options leave Server or Token
// empty; `questiond ask` reads the same ones.
const (
	EnvServer = "QUESTIOND_SERVER"
	EnvToken  = "QUESTIOND_TOKEN"
)

// Options configure a Client. Zero values mean the defaults.
type Options struct {
	Server     string        // base URL; default $QUESTIOND_SERVER, else "http://127.0.0.1:4097"
	Token      string        // agent bearer token; default $QUESTIOND_TOKEN; "" sends none
	HTTPClient *http.Client  // default: a client with no overall timeout (long-polls)
	PollWait   time.Duration // wait of one long-poll (GET /elicitations/{id}?wait=); default 30s
	MaxBackoff time.Duration // cap of the retry backoff on dropped connections / 5xx; default 10s

	// GiveUpUnreached bounds how long Elicit keeps trying to create a
	// question while questiond has never been reached (every connection
	// refused or unroutable); then it returns an error matching
	// ErrUnreachable. 0 keeps trying until ctx ends (the daemon may be
	// starting). Once questiond has answered, only ctx bounds the wait.
	GiveUpUnreached time.Duration
	// OnRetry, if set, is called before each retry of Elicit or Wait with
	// the failure and the delay until the next attempt, so that a caller
	// can log a daemon that is not answering. It must not block.
	OnRetry func(err error, delay time.Duration)
}

// Client talks to one questiond as an agent. It is safe for concurrent use.
type Client struct {
	base       *url.URL
	token      string
	http       *http.Client
	pollWait   time.Duration
	maxBackoff time.Duration
	giveUp     time.Duration
	onRetry    func(error, time.Duration)

	// pauseHook replaces the timer between retries in tests, which use it
	// to see every retry and decide when it goes. Always nil in production.
	pauseHook func(ctx context.Context, d time.Duration) error
}

// New returns a Client for the questiond at opts.Server. An empty Server or
// Token is read from $QUESTIOND_SERVER or $QUESTIOND_TOKEN, as `questiond ask`
// does; options given explicitly win over the environment.
func New(opts Options) (*Client, error) {
	server, from := opts.Server, "server"
	if server == "" {
		server, from = os.Getenv(EnvServer), EnvServer
	}
	if server == "" {
		server = DefaultServer
	}
	base, err := ParseServer(server)
	if err != nil {
		return nil, fmt.Errorf("questiond client: %s: %w", from, err)
	}
	token := opts.Token
	if token == "" {
		token = os.Getenv(EnvToken)
	}
	if opts.PollWait < 0 || opts.MaxBackoff < 0 || opts.GiveUpUnreached < 0 {
		return nil, errors.New("questiond client: PollWait, MaxBackoff and GiveUpUnreached must not be negative")
	}
	c := &Client{
		base:       base,
		token:      token,
		http:       opts.HTTPClient,
		pollWait:   opts.PollWait,
		maxBackoff: opts.MaxBackoff,
		giveUp:     opts.GiveUpUnreached,
		onRetry:    opts.OnRetry,
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	if c.pollWait == 0 {
		c.pollWait = DefaultPollWait
	}
	if c.maxBackoff == 0 {
		c.maxBackoff = DefaultMaxBackoff
	}
	return c, nil
}

// ParseServer checks questiond's base URL, as New and `questiond ask` read
// it: http:// or https://, a host, no query or fragment. A bare host:port is
// refused (not guessed as http://, which would send a token in clear to a
// server meant to be https) with a message that shows the URL wanted.
func ParseServer(server string) (*url.URL, error) {
	want := "want a URL such as " + DefaultServer
	if !strings.Contains(server, "://") {
		return nil, fmt.Errorf("%q has no scheme: %s", server, want)
	}
	base, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %s", server, want)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%q: %s (http:// or https:// with a host)", server, want)
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("%q: a base URL takes no query or fragment; %s", server, want)
	}
	return base, nil
}

// exchange is one finished HTTP exchange with a 2xx status.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

// maxBody bounds how much of a successful answer is read: an elicitation
// with its questions is a few kilobytes.
const maxBody = 16 << 20

// do sends one request and reads the whole answer. A non-2xx answer becomes
// an *Error; a transport failure is returned as it is, for the caller to
// judge whether it may retry.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any) (*exchange, error) {
	return c.send(ctx, method, path, query, body, nil)
}

// send is do with extra request headers.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body any, header http.Header) (*exchange, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reader)
	if err != nil {
		return nil, err
	}
	for name, values := range header {
		req.Header[name] = values
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		return &exchange{status: res.StatusCode, header: res.Header}, decodeError(res.StatusCode, data)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
	}
	return &exchange{status: res.StatusCode, header: res.Header, body: data}, nil
}
