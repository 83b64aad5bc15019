package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/bench/bare"
)

// listPending and listClients are the hot path issue 16 names: an operator
// list of 200 pending questions, fetched by 64 clients at once.
const (
	listPending = 200
	listClients = 64
)

// BenchmarkListPending measures GET /question with listPending questions
// pending, listClients requests in flight, at questiond (memory store) and at
// the bare server (bench/bare) seeded with the very items questiond listed,
// so both send the same bytes and the bare one sends them pre-encoded. Each
// iteration is one request to each server; the line carries both rates and
// questiond/bare. ns/op is the time of both requests.
func BenchmarkListPending(b *testing.B) {
	fx := newListFixture(b, listPending)
	defer fx.close()
	qc, bc, list := fx.questiond, fx.bare, fx.list
	// The two servers take turns, a round of listRound requests each, so
	// that whatever else runs on the machine falls on both alike.
	b.ResetTimer()
	var elapsed [2]time.Duration
	for done := 0; done < b.N; done += listRound {
		n := min(listRound, b.N-done)
		for i, c := range []*client{qc, bc} {
			start := time.Now()
			if err := listConcurrently(c, len(list), n); err != nil {
				b.Fatal(err)
			}
			elapsed[i] += time.Since(start)
		}
	}
	b.StopTimer()
	questiondRate, bareRate := float64(b.N)/elapsed[0].Seconds(), float64(b.N)/elapsed[1].Seconds()
	b.ReportMetric(questiondRate, "questiond-req/s")
	b.ReportMetric(bareRate, "bare-req/s")
	b.ReportMetric(questiondRate/bareRate, "questiond/bare")
}

// TestListPending runs the benchmark's exchange on a few questions, so its
// code stays exercised under -race.
func TestListPending(t *testing.T) {
	fx := newListFixture(t, 5)
	defer fx.close()
	for _, c := range []*client{fx.questiond, fx.bare} {
		if err := listConcurrently(c, len(fx.list), 2*listClients); err != nil {
			t.Fatal(err)
		}
	}
}

// listFixture is questiond with n questions pending and the bare server
// seeded with the very items questiond lists.
type listFixture struct {
	questiond, bare *client
	list            []byte // what both answer to GET /question
	close           func()
}

func newListFixture(tb testing.TB, n int) *listFixture {
	tb.Helper()
	q := startQuestiond(tb, operatorQueue(listClients))
	bareSrv := httptest.NewServer(bare.New().Handler())
	fx := &listFixture{questiond: newClient(q.url, listClients+8), bare: newClient(bareSrv.URL, listClients+8)}
	fx.close = func() {
		fx.questiond.close()
		fx.bare.close()
		q.stop()
		bareSrv.Close()
	}
	ctx := context.Background()
	for range n {
		if _, err := fx.questiond.ask(ctx); err != nil {
			fx.close()
			tb.Fatal(err)
		}
	}
	var list, got json.RawMessage
	err := fx.questiond.exchange(ctx, http.MethodGet, "/question", nil, http.StatusOK, &list)
	if err == nil {
		err = fx.bare.exchange(ctx, http.MethodPost, "/seed", list, http.StatusNoContent, nil)
	}
	if err == nil {
		err = fx.bare.exchange(ctx, http.MethodGet, "/question", nil, http.StatusOK, &got)
	}
	if err == nil && !bytes.Equal(got, list) {
		err = errors.New("the bare server lists other bytes than questiond")
	}
	if err != nil {
		fx.close()
		tb.Fatal(err)
	}
	fx.list = list
	return fx
}

// listRound is how many requests one server answers before the other's turn.
const listRound = 500

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
