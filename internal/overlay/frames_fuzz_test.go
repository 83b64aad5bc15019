package overlay_test

import (
	"errors"
	"io"
	"testing"

	"github.com/questiond/questiond/internal/overlay"
)

// FuzzFrameReader feeds arbitrary upstream bytes, cut into reads of a
// fuzzed size, under a fuzzed bound: the reader must give exactly the
// frames a reader of the whole input finds (referenceFrames), never one
// over the bound, and end as the input does; Data and Peek must take any
// frame.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("data: {\"payload\":{\"id\":\"evt_1\",\"type\":\"server.connected\",\"properties\":{}}}\n\n"), uint8(7), uint16(0))
	f.Fuzz(func(t *testing.T, in []byte, readSize uint8, maxBytes uint16) {
		n := int(readSize)%64 + 1
		bound := int(maxBytes)
		r := overlay.NewFrameReader(&chunked{src: in, n: n}, bound)
		if bound == 0 {
			bound = overlay.DefaultMaxFrameBytes
		}
		want, partial := referenceFrames(in)
		var got []string
		var end error
		for {
			fr, err := r.Next()
			if err != nil {
				end = err
				break
			}
			if len(fr) > bound {
				t.Fatalf("frame of %d bytes over the bound %d", len(fr), bound)
			}
			_ = overlay.Data(fr)
			_, _ = overlay.Peek(fr)
			got = append(got, string(fr))
		}
		if errors.Is(end, overlay.ErrFrameTooLarge) {
			// Every frame before the one over the bound came, and some
			// frame (or the partial tail) is over it.
			if len(got) > len(want) || !equalFrames(got, want[:len(got)]) {
				t.Fatalf("before the bound: got %q, want a prefix of %q", got, want)
			}
			over := len(partial) > bound
			for _, w := range want[len(got):] {
				over = over || len(w) > bound
			}
			if !over {
				t.Fatalf("ErrFrameTooLarge with no frame over %d: got %q of %q", bound, got, want)
			}
			return
		}
		if !equalFrames(got, want) {
			t.Fatalf("read %d at a time:\n got %q\nwant %q", n, got, want)
		}
		wantEnd := io.EOF
		if len(partial) > 0 {
			wantEnd = io.ErrUnexpectedEOF
		}
		if !errors.Is(end, wantEnd) {
			t.Fatalf("ended with %v, want %v", end, wantEnd)
		}
	})
}

// referenceFrames splits a whole stream into frames the simplest way, with
// all of it at hand, and returns what is left after the last one (blank
// lines between frames dropped).
func referenceFrames(in []byte) (frames []string, partial []byte) {
	i := 0
	for {
		for i < len(in) && (in[i] == '\r' || in[i] == '\n') {
			i++
		}
		start, blank, ended := i, true, false
		for i < len(in) && !ended {
			c := in[i]
			i++
			if c != '\r' && c != '\n' {
				blank = false
				continue
			}
			if c == '\r' && i < len(in) && in[i] == '\n' {
				i++
			}
			ended, blank = blank, true
		}
		if !ended {
			return frames, in[start:]
		}
		frames = append(frames, string(in[start:i]))
	}
}
