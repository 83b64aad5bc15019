package sse_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/sse"
)

// streamHeader is the header set of a recorded OpenCode /event response
// (shared/golden/transcripts/sse-event-idle.response) without Date, which
// changes, and Vary, which httpapi's CORS middleware adds.
var streamHeader = []string{
	"Cache-Control: no-cache, no-transform",
	"Content-Type: text/event-stream",
	"Transfer-Encoding: chunked",
	"X-Content-Type-Options: nosniff",
	"x-accel-buffering: no",
}

// TestStreamHeaderIsTheRecordedOne keeps streamHeader honest while the
// recording is at hand (it sits outside the repository).
func TestStreamHeaderIsTheRecordedOne(t *testing.T) {
	raw, err := os.ReadFile("../../../shared/golden/transcripts/sse-event-idle.response")
	if err != nil {
		t.Skipf("golden recording not available: %v", err)
	}
	head, _, _ := strings.Cut(string(raw), "\r\n\r\n")
	var recorded []string
	for _, l := range strings.Split(head, "\r\n")[1:] {
		if !strings.HasPrefix(l, "Date:") && !strings.HasPrefix(l, "Vary:") {
			recorded = append(recorded, l)
		}
	}
	slices.Sort(recorded)
	if !slices.Equal(recorded, streamHeader) {
		t.Fatalf("recording has %q, test expects %q", recorded, streamHeader)
	}
}

func TestEventStreamMatchesOpenCodeByteForByte(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	s := dialStream(t, h, "/event?directory=%2Fhome%2Falice%2Fproject")

	if s.status != "HTTP/1.1 200 OK" {
		t.Fatalf("status %q", s.status)
	}
	var got []string
	for _, l := range s.header {
		if !strings.HasPrefix(l, "Date:") {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, streamHeader) {
		t.Errorf("headers\n got %q\nwant %q", got, streamHeader)
	}

	connected := regexp.MustCompile(`^\{"id":"evt_[0-9a-f]{12}[0-9A-Za-z]{14}","type":"server\.connected","properties":\{\}\}$`)
	if f := s.next(t); !connected.MatchString(f) {
		t.Fatalf("first frame %q is not server.connected", f)
	}

	// Indented properties with HTML characters come out compact and unescaped,
	// keys in OpenCode's order.
	h.publish(t, "/home/alice/project", "question.asked", "{\n  \"q\": \"<a & b>\",\n  \"n\": [1, 2]\n}")
	f := s.next(t)
	want := regexp.MustCompile(`^\{"id":"evt_[0-9a-f]{12}[0-9A-Za-z]{14}","type":"question\.asked","properties":\{"q":"<a & b>","n":\[1,2\]\}\}$`)
	if !want.MatchString(f) {
		t.Fatalf("frame %q", f)
	}
}

func TestGlobalStreamEnvelope(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	g := dialStream(t, h, "/global/event")
	e := dialStream(t, h, "/event")

	connected := regexp.MustCompile(`^\{"payload":\{"id":"evt_[0-9a-f]{12}[0-9A-Za-z]{14}","type":"server\.connected","properties":\{\}\}\}$`)
	if f := g.next(t); !connected.MatchString(f) {
		t.Fatalf("first global frame %q", f)
	}
	e.nextEvent(t)

	h.publish(t, "/home/alice/project", "question.asked", `{"id":"que_1"}`)
	ge, ee := g.next(t), e.next(t)
	// The payload is the /event frame itself, same id.
	if want := `{"directory":"/home/alice/project","project":"global","payload":` + ee + `}`; ge != want {
		t.Fatalf("global frame\n got %s\nwant %s", ge, want)
	}

	h.publish(t, "", "server.instance.disposed", `{}`)
	ge, ee = g.next(t), e.next(t)
	if want := `{"payload":` + ee + `}`; ge != want {
		t.Fatalf("global frame of a directory-less event\n got %s\nwant %s", ge, want)
	}
}

func TestProjectOption(t *testing.T) {
	h := newHarness(t, harnessConfig{opts: sse.Options{Project: "4b825dc642cb"}})
	g := dialStream(t, h, "/global/event")
	g.next(t)
	h.publish(t, "/srv/repo", "question.asked", `{}`)
	if p := g.nextGlobal(t).Project; p == nil || *p != "4b825dc642cb" {
		t.Fatalf("project %v", p)
	}
}
