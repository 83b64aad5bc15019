package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/questiond/questiond/bench/bare"
)

// listPending and listClients are the hot path issue 16 names: an operator
// list of 200 pending questions, fetched by 64 clients at once.
const (
	listPending = 200
	listClients = 64
)

// BenchmarkListPending measures GET /question with listPending questions
// pending, listClients requests in flight: questiond (memory store), then the
// bare server (bench/bare) seeded with the very items questiond listed, so
// both send the same bytes and the bare one sends them pre-encoded. The bare
// line carries questiond/bare of requests per second.
func BenchmarkListPending(b *testing.B) {
	q := startQuestiond(b, operatorQueue(listClients))
	defer q.stop()
	qc := newClient(q.url, listClients+8)
	defer qc.close()
	for range listPending {
		if _, err := qc.ask(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	var list json.RawMessage
	if err := qc.exchange(context.Background(), http.MethodGet, "/question", nil, http.StatusOK, &list); err != nil {
		b.Fatal(err)
	}

	bareSrv := httptest.NewServer(bare.New().Handler())
	defer bareSrv.Close()
	bc := newClient(bareSrv.URL, listClients+8)
	defer bc.close()
	if err := bc.exchange(context.Background(), http.MethodPost, "/seed", list, http.StatusNoContent, nil); err != nil {
		b.Fatal(err)
	}
	var got json.RawMessage
	if err := bc.exchange(context.Background(), http.MethodGet, "/question", nil, http.StatusOK, &got); err != nil || !bytes.Equal(got, list) {
		b.Fatalf("the bare server lists other bytes than questiond (%v)", err)
	}

	rates := make(map[string]float64)
	for _, side := range []struct {
		name string
		c    *client
	}{{"questiond", qc}, {"bare", bc}} {
		b.Run(side.name, func(b *testing.B) {
			b.SetBytes(int64(len(list)))
			b.ResetTimer()
			if err := listConcurrently(side.c, len(list), b.N); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "req/s")
			rates[side.name] = rate
			if side.name == "bare" && rates["questiond"] > 0 {
				b.ReportMetric(rates["questiond"]/rate, "questiond/bare")
			}
		})
	}
}

// listConcurrently makes n GET /question requests, listClients at a time,
// each of which must answer 200 with size bytes.
func listConcurrently(c *client, size, n int) error {
	var started atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, listClients)
	for range listClients {
		wg.Go(func() {
			buf := make([]byte, 0, size+512)
			for started.Add(1) <= int64(n) {
				res, err := c.http.Get(c.base + "/question")
				if err != nil {
					errs <- err
					return
				}
				body := bytes.NewBuffer(buf[:0])
				_, err = io.Copy(body, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK || body.Len() != size {
					errs <- fmt.Errorf("GET /question: status %d, %d bytes, want %d (%v)", res.StatusCode, body.Len(), size, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
