package overlay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// hangGuard bounds each wait of the stream tests: a hang guard, not a
// speed limit.
const hangGuard = 30 * time.Second

// shortStart makes Stream give up on a stream that does not start after
// d, for the length of the test.
func shortStart(t *testing.T, d time.Duration) {
	was := streamStartTimeout
	streamStartTimeout = d
	t.Cleanup(func() { streamStartTimeout = was })
}

// await returns what done gets, failing the test if nothing comes within
// hangGuard.
func await[T any](t *testing.T, done <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-done:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("%s: still waiting after %v", what, hangGuard)
		panic("unreachable")
	}
}

// An OpenCode server still starting takes the connection and answers
// nothing: Stream gives up (ErrUnreachable, so the client is answered and
// connects again) instead of holding the client's stream for good.
func TestStreamFromAServerThatNeverAnswers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	shortStart(t, 200*time.Millisecond)
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	defer silent.CloseClientConnections() // a Stream still waiting, when the test failed
	u, err := New(Options{URL: silent.URL})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		frames, err := u.Stream(context.Background(), "/global/event", nil, nil)
		if frames != nil {
			frames.Close()
		}
		done <- err
	}()
	if err := await(t, done, "Stream from a server that answers nothing"); !errors.Is(err, ErrUnreachable) || !errors.Is(err, errNotStarted) {
		t.Fatalf("Stream: %v; want ErrUnreachable, not started", err)
	}
}

// A server that answers the header and then nothing: the stream's first
// Next fails, and so the client's stream ends.
func TestStreamThatSendsNoFrame(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	shortStart(t, 200*time.Millisecond)
	mute := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer mute.Close()
	defer mute.CloseClientConnections()
	frames := openGlobalStream(t, mute.URL)
	defer frames.Close()
	done := make(chan error, 1)
	go func() {
		_, err := frames.Next()
		done <- err
	}()
	if err := await(t, done, "the first frame of a stream that sends none"); !errors.Is(err, errNotStarted) {
		t.Fatalf("Next: %v; want not started", err)
	}
}

// A stream that started is never cut by the start's time limit: frames
// far apart all come.
func TestStreamThatStartedHasNoTimeLimit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	shortStart(t, 100*time.Millisecond)
	frame := "data: {\"payload\":{\"type\":\"server.connected\",\"properties\":{}}}\n\n"
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 2 {
			_, _ = io.WriteString(w, frame)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * streamStartTimeout): // well past the start's limit
			}
		}
	}))
	defer slow.Close()
	frames := openGlobalStream(t, slow.URL)
	defer frames.Close()
	for i := range 2 {
		got, err := frames.Next()
		if err != nil || string(got) != frame {
			t.Fatalf("frame %d: %q, %v; want %q", i+1, got, err, frame)
		}
	}
	if _, err := frames.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the server's end: %v, want io.EOF", err)
	}
}

// openGlobalStream opens the /global/event stream of the server at url.
func openGlobalStream(t *testing.T, url string) *FrameReader {
	t.Helper()
	u, err := New(Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	frames, err := u.Stream(context.Background(), "/global/event", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}
