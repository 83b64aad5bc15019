//go:build linux

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// idleCounts are the audiences the issue asks for.
var idleCounts = []int{1000, 10000}

const (
	idleWarmUp       = 10               // subscribers opened and closed before the first reading
	dialWorkers      = 8                // subscribers being opened at once
	subscribeTimeout = 2 * time.Minute  // to open every subscriber of one run
	connectTimeout   = 10 * time.Second // for one subscriber to get server.connected
	settleTimeout    = 30 * time.Second // for the resident set to stop moving
)

// BenchmarkIdleSubscribers measures what an idle /event subscriber costs a
// server in resident memory. Each sub-benchmark starts the server as a fresh
// process of its own (questiond: the binary built from cmd/questiond; the
// baseline: this test binary re-executed, see serveChild), warms it up with
// a few subscribers, and reads its VmRSS once it has settled; it then opens n
// subscribers over raw TCP (each sends GET /event, reads the headers and
// server.connected, then nothing more) and reads it again.
//
// Metrics: KiB/subscriber (the growth divided by n), KiB-rss-before and
// KiB-rss-after (the two readings), and on the baseline's line
// questiond/baseline of KiB/subscriber. The measurement is made once per
// run of a sub-benchmark, whatever b.N is; ns/op is only how long it took.
func BenchmarkIdleSubscribers(b *testing.B) {
	testenv.Heavy(b, "runs server processes holding up to 10 000 connections")
	bin := questiondBinary(b)
	for _, n := range idleCounts {
		needOpenFiles(b, n)
		perSubscriber := make(map[string]float64)
		for _, srv := range processServers {
			var m *idleMeasurement
			b.Run(fmt.Sprintf("%s/subscribers=%d", srv.name, n), func(b *testing.B) {
				// Each run (of -count) starts with b.N == 1; the framework
				// only calls again with a larger b.N if a run was quicker
				// than -benchtime, and those calls report the same figures.
				if b.N == 1 || m == nil {
					m = measureIdle(b, srv.start(b, bin, n+idleWarmUp), n)
				}
				b.ReportMetric(m.perSubscriber(), "KiB/subscriber")
				b.ReportMetric(float64(m.before), "KiB-rss-before")
				b.ReportMetric(float64(m.after), "KiB-rss-after")
				perSubscriber[srv.name] = m.perSubscriber()
				reportRatio(b, srv.name, perSubscriber)
			})
		}
		if perSubscriber["questiond"] == 0 || perSubscriber["baseline"] == 0 {
			continue // filtered out by -bench
		}
		b.Logf("%d idle subscribers: questiond %.1f KiB, baseline %.1f KiB each; questiond/baseline %.2f",
			n, perSubscriber["questiond"], perSubscriber["baseline"], perSubscriber["questiond"]/perSubscriber["baseline"])
	}
}

// TestIdleSubscribers runs the benchmark's measurement with a few
// subscribers against each server process, so its code stays exercised:
// both processes start, say where they listen, take subscribers, and exit
// cleanly when stopped.
func TestIdleSubscribers(t *testing.T) {
	testenv.Heavy(t, "builds questiond and runs server processes")
	bin := questiondBinary(t)
	for _, srv := range processServers {
		t.Run(srv.name, func(t *testing.T) {
			m := measureIdle(t, srv.start(t, bin, 50), 20)
			if m.before <= 0 || m.after <= 0 {
				t.Fatalf("resident sets %d KiB before and %d KiB after, want both positive", m.before, m.after)
			}
		})
	}
}

// TestIdleSubscribersServerDies checks that the harness fails fast, and
// hangs nowhere, when a server process dies under it.
func TestIdleSubscribersServerDies(t *testing.T) {
	testenv.Heavy(t, "runs a server process")
	p := startBaselineProcess(t, "", 0)
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	conns, err := subscribeIdle(ctx, p.addr, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIdle(conns)
	if err := stillOpen(conns); err != nil {
		t.Fatalf("while the server runs: %v", err)
	}

	p.Kill()
	if err := stillOpen(conns); err == nil {
		t.Fatal("subscribers of a killed server still look open")
	}
	if _, err := residentKiB(p.pid()); err == nil {
		t.Fatal("read the resident set of a process that was killed and waited for")
	}
	if more, err := subscribeIdle(ctx, p.addr, 3); err == nil {
		closeIdle(more)
		t.Fatal("subscribed to a killed server")
	}
	if err := p.stop(); err == nil {
		t.Fatal("stop reported nothing wrong about a server that died while in use")
	}
}

// idleMeasurement is one server's resident set, in KiB, before and after n
// idle subscribers joined.
type idleMeasurement struct {
	n             int
	before, after int64
}

func (m *idleMeasurement) perSubscriber() float64 {
	return float64(m.after-m.before) / float64(m.n)
}

// measureIdle measures p with n idle subscribers, then stops it.
func measureIdle(tb testing.TB, p *process, n int) *idleMeasurement {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	warm, err := subscribeIdle(ctx, p.addr, idleWarmUp)
	if err != nil {
		tb.Fatalf("%s: warming up: %v", p.name, err)
	}
	closeIdle(warm)
	m := &idleMeasurement{n: n}
	if m.before, err = settledKiB(tb, p); err != nil {
		tb.Fatal(err)
	}
	conns, err := subscribeIdle(ctx, p.addr, n)
	if err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	defer closeIdle(conns)
	if m.after, err = settledKiB(tb, p); err != nil {
		tb.Fatal(err)
	}
	if err := stillOpen(conns); err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	closeIdle(conns)
	if err := p.stop(); err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	return m
}

// settledKiB returns p's resident set once two readings half a second apart
// differ by at most 0.5 %, or the last reading after settleTimeout (with a
// log line saying so). Nothing in the server signals that it is done
// allocating, so the harness polls; the server is a process, not code to
// synchronise with.
func settledKiB(tb testing.TB, p *process) (int64, error) {
	tb.Helper()
	time.Sleep(time.Second) // the last handlers return, the stacks settle
	prev, err := residentKiB(p.pid())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.name, err)
	}
	deadline := time.Now().Add(settleTimeout)
	for {
		time.Sleep(500 * time.Millisecond)
		cur, err := residentKiB(p.pid())
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p.name, err)
		}
		if diff := cur - prev; diff*200 <= prev && -diff*200 <= prev {
			return cur, nil
		}
		if time.Now().After(deadline) {
			tb.Logf("%s: resident set still moving after %v (%d → %d KiB); using the last reading", p.name, settleTimeout, prev, cur)
			return cur, nil
		}
		prev = cur
	}
}

// needOpenFiles stops the benchmark (a skip, or a failure under CI) when n
// subscribers cannot be opened: this process holds one socket per
// subscriber, the server another.
func needOpenFiles(tb testing.TB, n int) {
	tb.Helper()
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		tb.Fatal(err)
	}
	if want := uint64(n + 512); limit.Cur < want {
		testenv.Missing(tb, fmt.Sprintf("room for %d open files per process (the limit is %d)", want, limit.Cur),
			fmt.Sprintf("raise it, e.g. ulimit -n %d", 2*n))
	}
}

// subscribeIdle opens n idle subscribers on the server at addr, a few at a
// time. On any failure it closes those it opened and returns the first error.
func subscribeIdle(ctx context.Context, addr string, n int) ([]net.Conn, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	conns := make([]net.Conn, n)
	var next atomic.Int64
	var workers sync.WaitGroup
	for range min(dialWorkers, n) {
		workers.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := subscribeRaw(ctx, addr)
				if err != nil {
					cancel(fmt.Errorf("subscriber %d of %d: %w", i+1, n, err))
					return
				}
				conns[i] = c
			}
		})
	}
	workers.Wait()
	if ctx.Err() != nil {
		closeIdle(conns)
		return nil, context.Cause(ctx)
	}
	return conns, nil
}

// subscribeRaw opens one subscriber the cheapest way for the client: a TCP
// connection with a hand-written GET /event, read up to the end of the
// server.connected frame and then left alone.
func subscribeRaw(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	if err := c.SetDeadline(deadline); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := io.WriteString(c, "GET /event HTTP/1.1\r\nHost: "+addr+"\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	if err := readConnected(c); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

var (
	headerEnd     = []byte("\r\n\r\n")
	statusOK      = []byte("HTTP/1.1 200 ")
	typeConnected = []byte(`"type":"server.connected"`)
	frameEnd      = []byte("\n\n")
)

// readConnected reads a GET /event response until its first frame,
// server.connected, is complete.
func readConnected(c net.Conn) error {
	var got []byte
	var chunk [512]byte
	for {
		n, err := c.Read(chunk[:])
		got = append(got, chunk[:n]...)
		head, body, complete := bytes.Cut(got, headerEnd)
		if complete && !bytes.HasPrefix(head, statusOK) {
			return fmt.Errorf("GET /event answered %q", got)
		}
		if complete {
			if _, rest, ok := bytes.Cut(body, typeConnected); ok && bytes.Contains(rest, frameEnd) {
				return nil
			}
		}
		if err != nil {
			return fmt.Errorf("GET /event: %w after %q", err, got)
		}
		if len(got) > 16<<10 {
			return fmt.Errorf("GET /event: no server.connected frame in the first %d bytes: %q", len(got), got)
		}
	}
}

// stillOpen checks, without waiting, that the server has not closed any of
// conns: a peek finds either nothing yet or frames (heartbeats), never the
// end of the stream or an error.
func stillOpen(conns []net.Conn) error {
	var buf [1]byte
	for i, c := range conns {
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			return err
		}
		var n int
		var peekErr error
		if err := raw.Read(func(fd uintptr) bool {
			n, _, peekErr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return true // answer at once, whatever the socket holds
		}); err != nil {
			return err
		}
		switch {
		case errors.Is(peekErr, syscall.EAGAIN):
		case peekErr != nil:
			return fmt.Errorf("subscriber %d of %d: %w", i+1, len(conns), peekErr)
		case n == 0:
			return fmt.Errorf("subscriber %d of %d: the server ended the stream", i+1, len(conns))
		}
	}
	return nil
}

// closeIdle closes every subscriber in conns (nil ones are skipped) with a
// reset, so that no socket lingers in TIME_WAIT on the client's ports.
func closeIdle(conns []net.Conn) {
	for _, c := range conns {
		if c == nil {
			continue
		}
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	}
}
