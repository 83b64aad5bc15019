package overlay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/overlay"
	"github.com/questiond/questiond/internal/sse"
)

// chunked hands out src's bytes at most n at a time, as a network does.
type chunked struct {
	src    []byte
	n      int
	closed bool
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.closed {
		return 0, errors.New("read after close")
	}
	if len(c.src) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.src))
	copy(p, c.src[:k])
	c.src = c.src[k:]
	return k, nil
}

func (c *chunked) Close() error {
	c.closed = true
	return nil
}

// readAll returns every frame of in, read n bytes at a time, and the error
// that ended the stream.
func readAll(in string, n, maxBytes int) ([]string, error) {
	r := overlay.NewFrameReader(&chunked{src: []byte(in), n: n}, maxBytes)
	var out []string
	for {
		f, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(f))
	}
}

func TestFramesComeWholeAndAsTheyCame(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
		end  error
	}{
		{
			name: "OpenCode's frames",
			in:   "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n",
			want: []string{"data: {\"a\":1}\n\n", "data: {\"b\":2}\n\n"},
			end:  io.EOF,
		},
		{
			name: "CRLF line ends",
			in:   "data: x\r\n\r\nevent: e\r\ndata: y\r\n\r\n",
			want: []string{"data: x\r\n\r\n", "event: e\r\ndata: y\r\n\r\n"},
			end:  io.EOF,
		},
		{
			name: "CR line ends",
			in:   "data: x\r\rdata: y\rid: 3\r\r",
			want: []string{"data: x\r\r", "data: y\rid: 3\r\r"},
			end:  io.EOF,
		},
		{
			name: "mixed line ends",
			in:   "data: a\ndata: b\r\n\rdata: c\r\n\n",
			want: []string{"data: a\ndata: b\r\n\r", "data: c\r\n\n"},
			end:  io.EOF,
		},
		{
			name: "comments, multi-line data and other fields",
			in:   ": hello\n\nretry: 10\nid: 1\ndata: one\ndata: two\n\n",
			want: []string{": hello\n\n", "retry: 10\nid: 1\ndata: one\ndata: two\n\n"},
			end:  io.EOF,
		},
		{
			name: "blank lines between frames are dropped",
			in:   "\n\r\n\rdata: a\n\n\n\n\r\ndata: b\n\n\n",
			want: []string{"data: a\n\n", "data: b\n\n"},
			end:  io.EOF,
		},
		{
			name: "a frame cut short by the end is not returned",
			in:   "data: a\n\ndata: b\n",
			want: []string{"data: a\n\n"},
			end:  io.ErrUnexpectedEOF,
		},
		{
			name: "a line cut short by the end",
			in:   "data: a\n\ndata",
			want: []string{"data: a\n\n"},
			end:  io.ErrUnexpectedEOF,
		},
		{
			name: "empty stream",
			in:   "",
			end:  io.EOF,
		},
	}
	for _, tc := range cases {
		for _, n := range []int{1, 2, 3, 7, 1 << 20} {
			got, err := readAll(tc.in, n, 0)
			if !errors.Is(err, tc.end) {
				t.Errorf("%s, read %d at a time: ended with %v, want %v", tc.name, n, err, tc.end)
			}
			if !equalFrames(got, tc.want) {
				t.Errorf("%s, read %d at a time:\n got %q\nwant %q", tc.name, n, got, tc.want)
			}
		}
	}
}

// equalFrames compares frames read at some chunking with the frames of the
// whole input: a frame ended by "\r" may lack the "\n" that had not
// arrived yet when it was returned.
func equalFrames(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] && !(strings.HasSuffix(got[i], "\r") && got[i]+"\n" == want[i]) {
			return false
		}
	}
	return true
}

// A "\r\n" that ends a frame stays whole when it arrives whole: the frame
// is not held back for the "\n" when it has not, and the "\n" is not taken
// for a blank line of the next frame.
func TestCRLFSplitAcrossReads(t *testing.T) {
	got, err := readAll("data: x\r\n\r\ndata: y\r\n\r\n", 1, 0)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	want := []string{"data: x\r\n\r", "data: y\r\n\r"}
	if !slicesEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	got, _ = readAll("data: x\r\n\r\ndata: y\r\n\r\n", 1<<20, 0)
	want = []string{"data: x\r\n\r\n", "data: y\r\n\r\n"}
	if !slicesEqual(got, want) {
		t.Fatalf("whole: got %q, want %q", got, want)
	}
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, "\x00|") == strings.Join(b, "\x00|") && len(a) == len(b)
}

// A frame over the bound ends the stream with ErrFrameTooLarge, before
// more than the bound (and one read) is held; the frames before it come.
func TestFrameOverTheBoundEndsTheStream(t *testing.T) {
	big := "data: " + strings.Repeat("x", 100) + "\n\n"
	in := "data: a\n\n" + big + "data: b\n\n"
	got, err := readAll(in, 7, len(big)-1)
	if !errors.Is(err, overlay.ErrFrameTooLarge) {
		t.Fatalf("ended with %v, want ErrFrameTooLarge", err)
	}
	if !slicesEqual(got, []string{"data: a\n\n"}) {
		t.Fatalf("frames before the large one: %q", got)
	}
	got, err = readAll(in, 7, len(big))
	if !errors.Is(err, io.EOF) || len(got) != 3 {
		t.Fatalf("a frame of exactly the bound: %d frames, %v", len(got), err)
	}
	// A frame that never ends is bounded too.
	r := overlay.NewFrameReader(io.NopCloser(io.MultiReader(strings.NewReader("data: "), neverEnding{})), 1<<16)
	if _, err := r.Next(); !errors.Is(err, overlay.ErrFrameTooLarge) {
		t.Fatalf("endless frame: %v", err)
	}
	if _, err := r.Next(); !errors.Is(err, overlay.ErrFrameTooLarge) {
		t.Fatalf("after the error: %v, want it again", err)
	}
}

type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A failed read ends the stream with that error, wrapped.
func TestReadErrorEndsTheStream(t *testing.T) {
	boom := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	r := overlay.NewFrameReader(io.NopCloser(src), 0)
	if f, err := r.Next(); err != nil || string(f) != "data: a\n\n" {
		t.Fatalf("first frame %q, %v", f, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("ended with %v, want %v", err, boom)
	}
}

// Close stops a Next that waits for upstream: it closes the source, which
// is what makes an http.Response body's Read return.
func TestCloseStopsAWaitingNext(t *testing.T) {
	pr, pw := io.Pipe()
	r := overlay.NewFrameReader(pr, 0)
	go func() { _, _ = pw.Write([]byte("data: a\n\ndata: b")) }()
	if f, err := r.Next(); err != nil || string(f) != "data: a\n\n" {
		t.Fatalf("first frame %q, %v", f, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Next()
		done <- err
	}()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Next after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestData(t *testing.T) {
	cases := map[string]string{
		"data: {\"a\":1}\n\n":                         `{"a":1}`,
		"data:{\"a\":1}\n\n":                          `{"a":1}`,
		"data:  two spaces\n\n":                       " two spaces",
		"event: x\ndata: one\r\ndata: two\rid: 1\r\r": "one\ntwo",
		"data\ndata: b\n\n":                           "\nb",
		": comment\n\n":                               "",
		"dat: a\ndata : b\n\n":                        "",
		"data: a\ndata: b\ndata: c\n\n":               "a\nb\nc",
	}
	for in, want := range cases {
		if got := string(overlay.Data([]byte(in))); got != want {
			t.Errorf("Data(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPeek(t *testing.T) {
	cases := []struct {
		frame string
		want  overlay.Peeked
		ok    bool
	}{
		{
			frame: `data: {"payload":{"id":"evt_1","type":"server.connected","properties":{}}}` + "\n\n",
			want:  overlay.Peeked{Type: "server.connected"},
			ok:    true,
		},
		{
			frame: `data: {"directory":"/p","project":"global","payload":{"id":"evt_2","type":"question.asked","properties":{"id":"que_1","sessionID":"ses_1","questions":[]}}}` + "\n\n",
			want:  overlay.Peeked{Type: "question.asked", Directory: "/p", SessionID: "ses_1", ID: "que_1"},
			ok:    true,
		},
		{
			frame: `data: {"id":"evt_3","type":"permission.replied","properties":{"sessionID":"ses_2","requestID":"per_1","reply":"once"}}` + "\n\n",
			want:  overlay.Peeked{Type: "permission.replied", SessionID: "ses_2", RequestID: "per_1"},
			ok:    true,
		},
		{
			// Fields of an unexpected type hide nothing else.
			frame: `data: {"directory":7,"payload":{"type":"x","properties":{"id":5,"sessionID":"ses_3"}}}` + "\r\n\r\n",
			want:  overlay.Peeked{Type: "x", SessionID: "ses_3"},
			ok:    true,
		},
		{
			frame: "data: {\"type\":\"multi\",\ndata: \"properties\":{\"id\":\"a\"}}\n\n",
			want:  overlay.Peeked{Type: "multi", ID: "a"},
			ok:    true,
		},
		{frame: ": comment\n\n"},
		{frame: "data: [1]\n\n"},
		{frame: "data: {\"type\":\n\n"},
		{frame: "data: \"x\"\n\n"},
	}
	for _, tc := range cases {
		got, ok := overlay.Peek([]byte(tc.frame))
		if got != tc.want || ok != tc.ok {
			t.Errorf("Peek(%q) = %+v, %v; want %+v, %v", tc.frame, got, ok, tc.want, tc.ok)
		}
	}
}

// A real OpenCode 1.18.33 /global/event recording: every HTTP chunk is one
// frame, and the reader gives exactly those frames back, whatever the reads.
func TestGoldenGlobalEventStream(t *testing.T) {
	raw, err := os.ReadFile("../../../shared/golden/transcripts/sse-global-event-main.response")
	if err != nil {
		t.Skipf("golden recording not available: %v", err)
	}
	chunks := goldenChunks(t, raw)
	if len(chunks) < 100 {
		t.Fatalf("only %d chunks in the recording", len(chunks))
	}
	whole := strings.Join(chunks, "")
	for _, n := range []int{1, 100, 4096, 1 << 20} {
		got, err := readAll(whole, n, 0)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("read %d at a time: %v", n, err)
		}
		if !slicesEqual(got, chunks) {
			t.Fatalf("read %d at a time: %d frames, want the %d chunks", n, len(got), len(chunks))
		}
	}
	var asked, resolved int
	for _, c := range chunks {
		p, ok := overlay.Peek([]byte(c))
		if !ok || p.Type == "" {
			t.Fatalf("Peek(%.200q) = %+v, %v", c, p, ok)
		}
		if p.Type == "question.replied" || p.Type == "question.rejected" {
			resolved++
			if !strings.HasPrefix(p.RequestID, "que_") || !strings.HasPrefix(p.SessionID, "ses_") {
				t.Fatalf("%s peeked as %+v", p.Type, p)
			}
		}
		if p.Type == "question.asked" {
			asked++
			if !strings.HasPrefix(p.ID, "que_") || !strings.HasPrefix(p.SessionID, "ses_") || p.Directory == "" {
				t.Fatalf("question.asked peeked as %+v", p)
			}
		}
	}
	if asked == 0 || resolved == 0 {
		t.Fatalf("%d question.asked, %d resolved in the recording", asked, resolved)
	}
}

// goldenChunks returns the chunks of a recorded chunked response, up to
// where the recording stops.
func goldenChunks(t *testing.T, raw []byte) []string {
	t.Helper()
	_, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatal("recording without a response head")
	}
	var chunks []string
	for len(body) > 0 {
		line, rest, ok := bytes.Cut(body, []byte("\r\n"))
		if !ok {
			break
		}
		size, err := strconv.ParseUint(string(line), 16, 32)
		if err != nil {
			t.Fatalf("chunk size %q: %v", line, err)
		}
		if size == 0 || uint64(len(rest)) < size+2 {
			break
		}
		chunks = append(chunks, string(rest[:size]))
		body = rest[size+2:]
	}
	return chunks
}

// A FrameReader over a real upstream response is a sse.Feed: a merged
// stream starts with upstream's first frame, then questiond's replay, and
// carries both sides; the client leaving cancels the upstream request, and
// upstream's stream ending ends the client's.
func TestFrameReaderFeedsAMergedStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	upstreamFrames := make(chan string, 16)
	upstreamGone := make(chan struct{}, 2)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `data: {"payload":{"id":"evt_up0","type":"server.connected","properties":{}}}`+"\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case f, ok := <-upstreamFrames:
				if !ok {
					return // upstream's stream ends
				}
				_, _ = io.WriteString(w, f)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				upstreamGone <- struct{}{}
				return
			}
		}
	}))
	defer up.Close()

	b, err := sse.New(sse.Options{Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pending := []sse.Message{{Directory: "/p", Event: sse.Event{Type: "question.asked", Properties: json.RawMessage(`{"id":"que_1","sessionID":"ses_1"}`)}}}
	qd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The stream outlives this handler: the upstream request must not
		// end with r's context, only when the broker closes the feed.
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.URL+"/global/event", nil)
		resp, err := up.Client().Do(req)
		if err != nil {
			cancel()
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		feed := overlay.NewFrameReader(cancelOnClose{resp.Body, cancel}, 0)
		if err := b.ServeGlobalMerged(w, r, sse.Standard, func() []sse.Message { return pending }, feed); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
	}))
	defer qd.Close()
	defer b.Close(context.Background())

	open := func() (*overlay.FrameReader, func()) {
		resp, err := qd.Client().Get(qd.URL)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		r := overlay.NewFrameReader(resp.Body, 0)
		return r, func() { r.Close() }
	}
	types := func(r *overlay.FrameReader, n int) []string {
		var out []string
		for range n {
			f, err := r.Next()
			if err != nil {
				t.Fatalf("after %q: %v", out, err)
			}
			p, _ := overlay.Peek(f)
			out = append(out, p.Type)
		}
		return out
	}

	client, stop := open()
	if got := types(client, 2); !slicesEqual(got, []string{"server.connected", "question.asked"}) {
		t.Fatalf("first frames %q", got)
	}
	upstreamFrames <- `data: {"directory":"/p","project":"global","payload":{"id":"evt_up1","type":"session.updated","properties":{"sessionID":"ses_1"}}}` + "\n\n"
	if got := types(client, 1); got[0] != "session.updated" {
		t.Fatalf("upstream frame: %q", got)
	}
	if err := b.Publish(context.Background(), sse.Message{Directory: "/p", Event: sse.Event{Type: "question.replied", Properties: json.RawMessage(`{"requestID":"que_1","sessionID":"ses_1","answers":[]}`)}}); err != nil {
		t.Fatal(err)
	}
	if got := types(client, 1); got[0] != "question.replied" {
		t.Fatalf("questiond frame: %q", got)
	}
	stop()
	select {
	case <-upstreamGone:
	case <-time.After(20 * time.Second):
		t.Fatal("the client left, the upstream request goes on")
	}

	client, stop = open()
	defer stop()
	types(client, 2)
	close(upstreamFrames)
	if _, err := client.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("upstream ended, the client's stream: %v, want its end", err)
	}
}

// cancelOnClose is an upstream response body whose Close also cancels its
// request.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	c.cancel()
	return c.ReadCloser.Close()
}

var _ sse.Feed = (*overlay.FrameReader)(nil)
