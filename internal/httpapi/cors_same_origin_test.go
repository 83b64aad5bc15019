package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// TestCORSPassesSameOriginPages sends the /ui page's writes as a browser sends
// them wherever questiond is reached: they are the page's own, not a foreign
// page's, and must never be refused as cross-origin. A foreign page still is.
func TestCORSPassesSameOriginPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{AllowedHosts: []string{"questions.example.com"}})
	port := h.URL[strings.LastIndex(h.URL, ":")+1:]
	cases := []struct {
		name                    string
		host, origin, fetchSite string
		want                    int
	}{
		{"at [::1], Origin only", "[::1]:" + port, "http://[::1]:" + port, "", http.StatusOK},
		{"at [::1]", "[::1]:" + port, "http://[::1]:" + port, "same-origin", http.StatusOK},
		{"at an allowed name behind a TLS proxy that keeps Host", "questions.example.com", "https://questions.example.com", "", http.StatusOK},
		{"behind a TLS proxy that rewrites Host", "127.0.0.1:" + port, "https://questions.example.com", "same-origin", http.StatusOK},
		{"a sibling site", "questions.example.com", "https://other.example.com", "same-site", http.StatusForbidden},
		{"a foreign page naming this host", "questions.example.com", "https://questions.example.com", "cross-site", http.StatusForbidden},
		{"a foreign page, Origin only", "[::1]:" + port, "https://evil.example", "", http.StatusForbidden},
		{"another port of the same host", "[::1]:" + port, "http://[::1]:1", "", http.StatusForbidden},
	}
	for _, c := range cases {
		id := h.create(seedForm()).ID
		headers := []string{"Host", c.host, "Origin", c.origin}
		if c.fetchSite != "" {
			headers = append(headers, "Sec-Fetch-Site", c.fetchSite)
		}
		res := h.doAt(http.MethodPost, "/question/"+id+"/reject", `{"action":"decline"}`, headers...)
		if res.Status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, res.Status, res.Body, c.want)
		}
		if c.want != http.StatusOK {
			h.do(http.MethodPost, "/question/"+id+"/reject", nil) // the refusal changed nothing
		}
	}
}

// doAt is do with a Host header among the headers.
func (h *harness) doAt(method, path string, body string, headers ...string) response {
	h.t.Helper()
	var host string
	var rest []string
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			host = headers[i+1]
			continue
		}
		rest = append(rest, headers[i], headers[i+1])
	}
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(rest); i += 2 {
		req.Header.Set(rest[i], rest[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	var buf strings.Builder
	_, _ = io.Copy(&buf, res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: []byte(buf.String())}
}
