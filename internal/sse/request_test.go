package sse_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/sse"
)

// A stream is chosen by route and directory only: a stray ?stream= or a
// Last-Event-ID header (nothing is replayed) changes nothing.
func TestStreamIgnoresStreamParameterAndLastEventID(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	for _, tc := range []struct {
		target string
		header []string
	}{
		{target: "/event"},
		{target: "/event?directory=%2Fhome%2Falice%2Fproject"},
		{target: "/event", header: []string{"Last-Event-ID: abc"}},
		{target: "/event?directory=/p&stream=global", header: []string{"Last-Event-ID: 12"}},
		{target: "/global/event", header: []string{"Last-Event-ID: abc"}},
		{target: "/global/event?stream=nope"},
	} {
		s := dialStream(t, h, tc.target, tc.header...)
		if s.status != "HTTP/1.1 200 OK" {
			t.Errorf("%s %v: %s %s", tc.target, tc.header, s.status, s.body)
			continue
		}
		f := s.next(t)
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f), &probe); err != nil {
			t.Fatal(err)
		}
		_, global := probe["payload"]
		if want := strings.HasPrefix(tc.target, "/global"); global != want {
			t.Errorf("%s: first frame %s is on the wrong stream", tc.target, f)
		}
	}
}

// noFlush hides every method of the ResponseWriter but the three basic ones,
// as a careless middleware would.
type noFlush struct{ http.ResponseWriter }

func TestWriterWithoutFlushIsRefusedUntouched(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	rec := httptest.NewRecorder()
	err := h.b.ServeEvent(noFlush{rec}, httptest.NewRequest(http.MethodGet, "/event", nil), "", sse.Standard, nil)
	if !errors.Is(err, sse.ErrCannotFlush) {
		t.Fatalf("ServeEvent: %v, want ErrCannotFlush", err)
	}
	if len(rec.Header()) != 0 || rec.Body.Len() != 0 || rec.Flushed {
		t.Fatalf("the refused stream was written to: %v %q", rec.Header(), rec.Body)
	}
	if n := h.b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers", n)
	}
}

func TestDirectoriesBeyondMaxScopesGet503(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: sse.Options{MaxScopes: 2}})
	for _, dir := range []string{"/a", "/b", "/a"} {
		if s := dialStream(t, h, "/event?directory="+dir); s.status != "HTTP/1.1 200 OK" {
			t.Fatalf("%s: %s", dir, s.status)
		}
	}
	s := dialStream(t, h, "/event?directory=/c")
	if s.status != "HTTP/1.1 503 Service Unavailable" {
		t.Fatalf("third directory: %s", s.status)
	}
	if err := h.refusal(t); !errors.Is(err, sse.ErrTooManyScopes) || !strings.Contains(err.Error(), "limit 2") {
		t.Fatalf("third directory refused with %v, want ErrTooManyScopes naming the limit", err)
	}
	// Streams without a directory are not limited.
	for _, target := range []string{"/event", "/global/event"} {
		if s := dialStream(t, h, target); s.status != "HTTP/1.1 200 OK" {
			t.Fatalf("%s: %s", target, s.status)
		}
	}
}
