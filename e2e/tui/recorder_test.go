package tui

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// exchange is one request the TUI sent and what questiond answered.
type exchange struct {
	Method, Path string
	Status       int
	Body         string // the answer's first bytes; "" for event streams
}

// recorder is a pass-through proxy between the TUI and questiond that
// notes every exchange, so a test can tell what the TUI asked and got. Its
// log is the artifact <name>-traffic.txt.
type recorder struct {
	URL string
	mu  sync.Mutex
	all []exchange
}

func record(t *testing.T, name, target string) *recorder {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(to)
	proxy.FlushInterval = -1 // event streams pass at once
	proxy.ModifyResponse = func(res *http.Response) error {
		ex := exchange{Method: res.Request.Method, Path: res.Request.URL.RequestURI(), Status: res.StatusCode}
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				return err
			}
			res.Body = io.NopCloser(bytes.NewReader(body))
			ex.Body = string(body[:min(len(body), 300)])
		}
		rec.mu.Lock()
		rec.all = append(rec.all, ex)
		rec.mu.Unlock()
		return nil
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		rec.mu.Lock()
		rec.all = append(rec.all, exchange{Method: r.Method, Path: r.URL.RequestURI(), Status: http.StatusBadGateway, Body: err.Error()})
		rec.mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}
	srv := httptest.NewServer(proxy)
	rec.URL = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		var log strings.Builder
		for _, ex := range rec.exchanges() {
			fmt.Fprintf(&log, "%s %s → %d %s\n", ex.Method, ex.Path, ex.Status, ex.Body)
		}
		_ = os.WriteFile(filepath.Join(t.ArtifactDir(), name+"-traffic.txt"), []byte(log.String()), 0o644)
	})
	return rec
}

func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.all...)
}

// find returns the exchanges whose method and path (without the query)
// match.
func (r *recorder) find(method, path string) []exchange {
	var found []exchange
	for _, ex := range r.exchanges() {
		p, _, _ := strings.Cut(ex.Path, "?")
		if ex.Method == method && p == path {
			found = append(found, ex)
		}
	}
	return found
}
