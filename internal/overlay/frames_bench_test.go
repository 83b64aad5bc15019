package overlay_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/overlay"
)

// benchStream is an OpenCode-like /global/event stream: mostly small
// frames, every 50th a large message.part.updated.
func benchStream() []byte {
	var b bytes.Buffer
	for i := range 2000 {
		text := "short"
		if i%50 == 0 {
			text = strings.Repeat("x", 64<<10)
		}
		fmt.Fprintf(&b, `data: {"directory":"/p","project":"global","payload":{"id":"evt_%d","type":"message.part.updated","properties":{"sessionID":"ses_1","part":{"text":%q}}}}`+"\n\n", i, text)
	}
	return b.Bytes()
}

// BenchmarkFrameReader cuts the stream into frames; BenchmarkLineBaseline
// does the least any relay that keeps whole frames must do, with bufio:
// split lines on "\n" only and copy them into a fresh slice per frame. The
// ratio is FrameReader's cost over that.
func BenchmarkFrameReader(b *testing.B) {
	stream := benchStream()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := overlay.NewFrameReader(io.NopCloser(bytes.NewReader(stream)), 0)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

func BenchmarkLineBaseline(b *testing.B) {
	stream := benchStream()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		br := bufio.NewReaderSize(bytes.NewReader(stream), 32<<10)
		var frame []byte
		for {
			line, err := br.ReadSlice('\n')
			if err != nil && err != bufio.ErrBufferFull {
				break
			}
			frame = append(frame, line...)
			if len(line) == 1 {
				frame = nil // a whole frame: handed over
			}
		}
	}
}

// BenchmarkPeek reads type and ids of a small and of a large frame.
func BenchmarkPeek(b *testing.B) {
	for _, size := range []int{10, 64 << 10} {
		frame := []byte(fmt.Sprintf(`data: {"directory":"/p","project":"global","payload":{"id":"evt_1","type":"question.asked","properties":{"id":"que_1","sessionID":"ses_1","text":%q}}}`+"\n\n", strings.Repeat("x", size)))
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if p, ok := overlay.Peek(frame); !ok || p.ID != "que_1" {
					b.Fatal(p, ok)
				}
			}
		})
	}
}
