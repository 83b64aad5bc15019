package overlay

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A forwarded GET whose answer never begins is answered by the forwarder's
// failure handler once forwardAnswerTimeout has passed; a POST that takes
// longer (a prompt call) is not cut, and a GET that answered streams on.
func TestForwardedReadsGiveUpOnAServerThatNeverAnswers(t *testing.T) {
	saved := forwardAnswerTimeout
	forwardAnswerTimeout = 200 * time.Millisecond
	t.Cleanup(func() { forwardAnswerTimeout = saved })
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/never":
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		case "/slow":
			time.Sleep(3 * forwardAnswerTimeout)
		case "/trickle":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(3 * forwardAnswerTimeout)
		}
		_, _ = io.WriteString(w, "done")
	}))
	t.Cleanup(func() { close(release); server.Close() })
	u, err := New(Options{URL: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	var failure error
	forward := u.Forwarder(func(w http.ResponseWriter, r *http.Request, err error) {
		failure = err
		w.WriteHeader(http.StatusBadGateway)
	})
	serve := func(method, path string) (*httptest.ResponseRecorder, time.Duration) {
		failure = nil
		w := httptest.NewRecorder()
		start := time.Now()
		forward.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader("")))
		return w, time.Since(start)
	}

	w, took := serve(http.MethodGet, "/never")
	if w.Code != http.StatusBadGateway || !errors.Is(failure, ErrUnreachable) || !strings.Contains(failure.Error(), errNoAnswer.Error()) {
		t.Fatalf("GET of a server that never answers: %d, %v; want the failure handler with ErrUnreachable", w.Code, failure)
	}
	if took > 20*forwardAnswerTimeout {
		t.Fatalf("GET gave up after %v, want about %v", took, forwardAnswerTimeout)
	}
	for _, c := range []struct{ method, path string }{{http.MethodPost, "/slow"}, {http.MethodGet, "/trickle"}} {
		if w, _ := serve(c.method, c.path); w.Code != http.StatusOK || w.Body.String() != "done" || failure != nil {
			t.Fatalf("%s %s: %d %q, %v; want its whole answer", c.method, c.path, w.Code, w.Body, failure)
		}
	}
}
