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
	"strings"
	"time"
)

// Defaults for Options.
const (
	DefaultServer     = "http://127.0.0.1:4097"
	DefaultPollWait   = 30 * time.Second
	DefaultMaxBackoff = 10 * time.Second
)

// Options configure a Client. Zero values mean the defaults.
type Options struct {
	Server     string        // base URL; default "http://127.0.0.1:4097"
	Token      string        // agent bearer token; "" sends none
	HTTPClient *http.Client  // default: a client with no overall timeout (long-polls)
	PollWait   time.Duration // wait of one long-poll (GET /elicitations/{id}?wait=); default 30s
	MaxBackoff time.Duration // cap of the retry backoff on dropped connections / 5xx; default 10s
}

// Client talks to one questiond as an agent. It is safe for concurrent use.
type Client struct {
	base       *url.URL
	token      string
	http       *http.Client
	pollWait   time.Duration
	maxBackoff time.Duration

	// pauseHook replaces the timer between retries in tests, which use it
	// to see every retry and decide when it goes. Always nil in production.
	pauseHook func(ctx context.Context, d time.Duration) error
}

// New returns a Client for the questiond at opts.Server.
func New(opts Options) (*Client, error) {
	server := opts.Server
	if server == "" {
		server = DefaultServer
	}
	base, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil {
		return nil, fmt.Errorf("questiond client: server %q: %w", server, err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("questiond client: server %q: want an http:// or https:// URL with a host", server)
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("questiond client: server %q: a base URL takes no query or fragment", server)
	}
	if opts.PollWait < 0 || opts.MaxBackoff < 0 {
		return nil, errors.New("questiond client: PollWait and MaxBackoff must not be negative")
	}
	c := &Client{
		base:       base,
		token:      opts.Token,
		http:       opts.HTTPClient,
		pollWait:   opts.PollWait,
		maxBackoff: opts.MaxBackoff,
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
