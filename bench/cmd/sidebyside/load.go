package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/questiond/questiond/bench/workload"
)

// request is one HTTP request of a load case.
type request struct {
	method, path string
	body         []byte
}

// loadResult is what one load case measured on one server.
type loadResult struct {
	ok, failed int             // answers with the wanted status, and the rest (errors included)
	firstError string          // what the first failure was, for the report
	elapsed    time.Duration   // from the first request sent to the last answer read
	latencies  []time.Duration // of the answers with the wanted status
}

func (r loadResult) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// quantile is the q-quantile of the latencies (nearest rank), 0 with none.
func (r loadResult) quantile(q float64) time.Duration { return workload.Quantile(r.latencies, q) }

// newLoadClient keeps up to conns keep-alive connections to one server, so
// the load measures requests, not connection set-up.
func newLoadClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			MaxConnsPerHost:     conns,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}

// drive sends requests from conns workers at once, each waiting for its
// answer before sending the next, until next says there are no more or
// the duration (when positive) is over. next is called with 0, 1, 2, … and
// must be safe for concurrent use. Every answer is read to the end; one
// whose status is not want counts as a failure.
func drive(client *http.Client, base string, conns int, duration time.Duration, want int, next func(k int) (request, bool)) loadResult {
	var (
		counter  atomic.Int64
		mu       sync.Mutex
		result   loadResult
		wg       sync.WaitGroup
		deadline time.Time
	)
	start := time.Now()
	if duration > 0 {
		deadline = start.Add(duration)
	}
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var latencies []time.Duration
			ok, failed, firstError := 0, 0, ""
			for {
				if !deadline.IsZero() && time.Now().After(deadline) {
					break
				}
				req, more := next(int(counter.Add(1) - 1))
				if !more {
					break
				}
				sent := time.Now()
				_, err := exchange(client, base, req, want)
				took := time.Since(sent)
				if err != nil {
					failed++
					if firstError == "" {
						firstError = err.Error()
					}
					continue
				}
				ok++
				latencies = append(latencies, took)
			}
			mu.Lock()
			defer mu.Unlock()
			result.ok += ok
			result.failed += failed
			result.latencies = append(result.latencies, latencies...)
			if result.firstError == "" {
				result.firstError = firstError
			}
		}()
	}
	wg.Wait()
	result.elapsed = time.Since(start)
	return result
}

// exchange sends req and reads the whole answer; it returns the body's
// length, or why the answer was not the wanted one.
func exchange(client *http.Client, base string, req request, want int) (int64, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	r, err := http.NewRequest(req.method, base+req.path, body)
	if err != nil {
		return 0, err
	}
	if req.body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(r)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 300))
		_, _ = io.Copy(io.Discard, res.Body)
		return 0, fmt.Errorf("%s %s: status %d, want %d: %s", req.method, req.path, res.StatusCode, want, data)
	}
	return io.Copy(io.Discard, res.Body)
}

// repeat is a next function sending req again and again.
func repeat(req request) func(int) (request, bool) {
	return func(int) (request, bool) { return req, true }
}

// each is a next function sending every request of reqs once.
func each(reqs []request) func(int) (request, bool) {
	return func(k int) (request, bool) {
		if k >= len(reqs) {
			return request{}, false
		}
		return reqs[k], true
	}
}
