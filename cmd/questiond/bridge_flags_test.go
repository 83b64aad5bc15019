package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// questiond bridge's command line: --url takes the place of a COMMAND, and
// a malformed or misplaced --header is a usage error (status 2) that says
// what is wrong.
func TestBridgeURLAndHeaderUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--", "deploy-mcp-server"}, "both --url and a COMMAND"},
		{[]string{"--url", "ftp://example.com/mcp"}, `--url "ftp://example.com/mcp" is not an http or https URL`},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--header", "Authorization"}, `"Authorization" is not K=V`},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--header", "Bad Name=1"}, `"Bad Name" is not an HTTP header name`},
		{[]string{"--url", "http://127.0.0.1:1/mcp", "--header", "X-Key=a\nInjected: 1"}, "control character"},
		{[]string{"--header", "X-Key=1", "--", "deploy-mcp-server"}, "--header is for a server reached with --url"},
		{[]string{"--name", "deploy"}, "no server to run"},
	} {
		var stderr bytes.Buffer
		status := bridgeCommand(context.Background(), tc.args, func(string) string { return "" }, nil,
			io.NopCloser(strings.NewReader("")), nopWriteCloser{io.Discard}, &stderr)
		if status != bridgeUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("bridge %q: status %d, stderr %q; want %d and %q", tc.args, status, stderr.String(), bridgeUsage, tc.want)
		}
	}
}

// --help explains --url and --header.
func TestBridgeHelpNamesURLAndHeader(t *testing.T) {
	var stderr bytes.Buffer
	status := bridgeCommand(context.Background(), []string{"--help"}, func(string) string { return "" }, nil,
		io.NopCloser(strings.NewReader("")), nopWriteCloser{io.Discard}, &stderr)
	help := stderr.String()
	for _, want := range []string{"questiond bridge [flags] --url URL [--header K=V]...", "  --url URL\n", "  --header K=V\n"} {
		if status != bridgeEnded || !strings.Contains(help, want) {
			t.Fatalf("bridge --help (status %d) does not say %q:\n%s", status, want, help)
		}
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
