package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Exit statuses of `questiond health`, as Docker's HEALTHCHECK reads them
// (it reserves 2).
const (
	healthOK     = 0
	healthFailed = 1
)

const defaultHealthTimeout = 3 * time.Second

const healthUsageHeader = `questiond health asks the daemon on this machine whether it is up, for a
container's HEALTHCHECK or a Kubernetes exec probe where there is no shell or
curl (the image is distroless). It reads the daemon's own settings, so it
runs with the same flags or environment: --addr (QUESTIOND_ADDR), where an
address of every interface (0.0.0.0, [::], :4097) means this machine's
loopback, and --tls-cert (QUESTIOND_TLS_CERT), which makes it use HTTPS and
trust exactly that certificate. It sends no credentials: GET /global/health
answers probes without them.

Usage:
  questiond health [--addr host:port] [--tls-cert file] [--timeout duration]

Exit status: 0 when the daemon answers that it is healthy; 1 otherwise, with
one line on stderr saying why.

Flags:
`

// health is `questiond health`: it returns the process's exit status.
func health(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	probe, err := parseHealth(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return healthOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "questiond health:", err)
		return healthFailed
	}
	answer, err := probe.run(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "questiond health:", err)
		return healthFailed
	}
	fmt.Fprintln(stdout, "questiond health:", answer)
	return healthOK
}

// healthProbe is one check of a daemon's health.
type healthProbe struct {
	url     string
	addr    string // as configured, for messages
	timeout time.Duration
	pinned  []byte // DER of the certificate the daemon must serve; nil for HTTP
}

func parseHealth(args []string, getenv func(string) string, stderr io.Writer) (*healthProbe, error) {
	var addr, certFile string
	timeout := defaultHealthTimeout
	fs := flag.NewFlagSet("questiond health", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&addr, "addr", "", "the daemon's listen address, `host:port` (default \""+defaultAddr+"\", env QUESTIOND_ADDR)")
	fs.StringVar(&certFile, "tls-cert", "", "the daemon's TLS certificate `file`: probe with HTTPS, trusting it (env QUESTIOND_TLS_CERT)")
	fs.Var(durationValue{&timeout}, "timeout", "give up after this `duration` (default \""+defaultHealthTimeout.String()+"\")")
	var badValue error
	fs.VisitAll(func(f *flag.Flag) { f.Value = reportingValue{f.Value, f.Name, &badValue} })
	if err := fs.Parse(args); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			fmt.Fprint(stderr, healthUsageHeader)
			writeFlags(stderr, fs, nil, nil)
			return nil, err
		case badValue != nil:
			err = badValue
		}
		return nil, fmt.Errorf("%v (see questiond health --help)", flagError(err))
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (see questiond health --help)", fs.Arg(0))
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", timeout)
	}
	if addr == "" {
		addr = getenv("QUESTIOND_ADDR")
	}
	if addr == "" {
		addr = defaultAddr
	}
	if certFile == "" {
		certFile = getenv("QUESTIOND_TLS_CERT")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !validPort(port) || port == "0" {
		return nil, fmt.Errorf("--addr (QUESTIOND_ADDR): want the daemon's host:port, like 127.0.0.1:4097, got %q", addr)
	}
	p := &healthProbe{addr: addr, timeout: timeout}
	scheme := "http"
	if certFile != "" {
		if p.pinned, err = leafCertificate(certFile); err != nil {
			return nil, fmt.Errorf("--tls-cert (QUESTIOND_TLS_CERT): %w", err)
		}
		scheme = "https"
	}
	p.url = scheme + "://" + net.JoinHostPort(loopbackFor(host), port) + "/global/health"
	return p, nil
}

// loopbackFor is the host to probe a daemon listening on host at: an
// address of every interface is reached on loopback.
func loopbackFor(host string) string {
	switch ip := net.ParseIP(host); {
	case host == "":
		return "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		return "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		return "::1"
	}
	return host
}

// leafCertificate reads the first certificate of a PEM file.
func leafCertificate(file string) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("%s holds no PEM certificate", file)
		}
		if block.Type == "CERTIFICATE" {
			return block.Bytes, nil
		}
	}
}

// run asks the daemon once and describes a healthy answer; any other
// outcome is an error of one line.
func (p *healthProbe) run(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	transport := &http.Transport{
		Proxy:             nil, // a probe of this machine never goes through HTTP_PROXY
		DisableKeepAlives: true,
	}
	if p.pinned != nil {
		// The certificate names the daemon's public host, not loopback: trust
		// exactly the daemon's own certificate instead of a name.
		transport.TLSClientConfig = &tls.Config{
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, p.pinned) {
					return errors.New("the daemon serves another certificate than --tls-cert")
				}
				return nil
			},
		}
	}
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return "", err
	}
	res, err := client.Do(req)
	if err != nil {
		return "", p.unreachable(ctx, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s: %s", p.url, res.Status, oneLine(body))
	}
	var answer struct {
		Healthy bool   `json:"healthy"`
		Version string `json:"version"`
	}
	if json.Unmarshal(body, &answer) != nil || !answer.Healthy {
		return "", fmt.Errorf("%s answered 200 but not {\"healthy\":true}: %s (is it questiond?)", p.url, oneLine(body))
	}
	if answer.Version != "" {
		return fmt.Sprintf("healthy, version %s, at %s", answer.Version, p.url), nil
	}
	return "healthy at " + p.url, nil
}

// unreachable says why no answer came, naming the setting to check.
func (p *healthProbe) unreachable(ctx context.Context, err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // it names the URL, which every message here names already
	}
	var op *net.OpError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no answer from %s within %s (--timeout)", p.url, p.timeout)
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("nothing answers at %s: is questiond running, listening on --addr/QUESTIOND_ADDR %s? (%v)", p.url, p.addr, op.Err)
	}
	return fmt.Errorf("asking %s: %v", p.url, err)
}

// oneLine is a body fit for a one-line message.
func oneLine(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(no body)"
	}
	return s
}
