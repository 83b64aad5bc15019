package sse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// BenchmarkPublishFanout measures one Publish until the last of 1000
// in-process subscribers of the event's directory has its frame flushed.
func BenchmarkPublishFanout(b *testing.B) {
	for _, size := range []int{128, 4 << 10} {
		b.Run(fmt.Sprintf("subscribers=1000/payload=%dB", size), func(b *testing.B) {
			benchFanout(b, 1000, size)
		})
	}
}

func benchFanout(b *testing.B, subscribers, size int) {
	br, err := sse.New(sse.Options{Heartbeat: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	var flushed atomic.Int64
	allIn := make(chan struct{}, 1)
	onFlush := func([]byte) {
		if flushed.Add(1) == int64(subscribers) {
			allIn <- struct{}{}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range subscribers {
		wg.Go(func() {
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/event", nil)
			br.ServeEvent(newMemWriter(onFlush), r, "/bench", sse.Standard, nil)
		})
	}
	<-allIn // every server.connected is out: all are registered

	props := json.RawMessage(`{"pad":"` + strings.Repeat("x", size) + `"}`)
	m := sse.Message{Directory: "/bench", Event: sse.Event{Type: "question.asked", Properties: props}}
	b.ReportAllocs()
	for b.Loop() {
		flushed.Store(0)
		if err := br.Publish(context.Background(), m); err != nil {
			b.Fatal(err)
		}
		<-allIn
	}
	b.StopTimer()

	cancel()
	wg.Wait()
	if err := br.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}
