package client_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/questiond/questiond/client"
)

// losingProxy is a TCP proxy that loses the answer to the first POST
// /elicitations: it forwards the request, waits until the daemon's answer
// starts, forwards keep bytes of it (0: none; else headers and part of the
// body), and drops the connection. Everything else passes.
type losingProxy struct {
	*tcpProxy
	keep    func(answer []byte) int
	lost    atomic.Bool // the answer has been lost
	dropped chan struct{}
}

func startLosingProxy(t *testing.T, backend string, keep func([]byte) int) *losingProxy {
	t.Helper()
	p := &losingProxy{keep: keep, dropped: make(chan struct{})}
	p.tcpProxy = startTCPProxy(t, backend, func(in, out net.Conn) (up, down func()) {
		var lose atomic.Bool // this connection carries the POST whose answer is lost
		up = func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := in.Read(buf)
				if n > 0 {
					if bytes.Contains(buf[:n], []byte("POST /elicitations")) && p.lost.CompareAndSwap(false, true) {
						lose.Store(true) // before the request goes on, so before any answer
					}
					if _, err := out.Write(buf[:n]); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = out.Close()
		}
		down = func() {
			defer in.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := out.Read(buf)
				if n > 0 && lose.Load() {
					_, _ = in.Write(buf[:min(p.keep(buf[:n]), n)])
					_ = out.Close()
					close(p.dropped)
					return
				}
				if n > 0 {
					if _, err := in.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}
		return up, down
	})
	return p
}

// nothing keeps none of the answer: the connection drops before it starts.
func nothing([]byte) int { return 0 }

// headersAndSome keeps the status line, the headers and 5 bytes of the body.
func headersAndSome(answer []byte) int {
	if i := bytes.Index(answer, []byte("\r\n\r\n")); i >= 0 {
		return i + 4 + 5
	}
	return len(answer) / 2
}

// countAsked reads operator events until typ and counts the question.asked
// frames before it.
func countAsked(t *testing.T, e *events, typ string) int {
	t.Helper()
	asked := 0
	timeout := time.After(15 * time.Second)
	for {
		select {
		case f, ok := <-e.frames:
			if !ok {
				t.Fatalf("the event stream ended before %s", typ)
			}
			switch f.Type {
			case "question.asked":
				asked++
			case typ:
				return asked
			}
		case <-timeout:
			t.Fatalf("no %s event within 15s", typ)
		}
	}
}

// The acceptance test of exactly-once creates: the connection carrying the
// POST drops after the daemon got it and before its answer reaches the
// client (or halfway through the answer). Elicit sends it again under its
// Idempotency-Key and gets the same question; exactly one is asked, and the
// agent gets the operator's answer.
func TestElicitAsksOnceWhenTheCreateAnswerIsLost(t *testing.T) {
	for name, keep := range map[string]func([]byte) int{"before the answer": nothing, "mid-body": headersAndSome} {
		t.Run(name, func(t *testing.T) {
			d := startDaemon(t, daemonConfig{})
			proxy := startLosingProxy(t, d.Addr, keep)
			ops := watch(t, d.URL)
			c := newClient(t, proxy.URL, client.Options{MaxBackoff: 20 * time.Millisecond})
			out := elicitAsync(t, t.Context(), c, deployForm(t))
			q := ops.asked(t)
			<-proxy.dropped
			if list := pendingQuestions(t, d.URL); len(list) != 1 || list[0].ID != q.ID {
				t.Fatalf("pending %v, want only %s", list, q.ID)
			}
			reply(t, d.URL, q.ID, []string{"api"}, []string{"3"}, []string{"1"}, []string{"Yes"}, []string{"Ireland"}, []string{})
			o := await(t, out)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if replicas, err := o.res.Int("replicas"); err != nil || replicas != 3 {
				t.Fatalf("replicas %d, %v", replicas, err)
			}
			if more := countAsked(t, ops, "question.replied"); more != 0 {
				t.Fatalf("%d more question.asked events, want none", more)
			}
			if n := d.created.Load(); n != 1 || !proxy.lost.Load() {
				t.Fatalf("%d questions created (an answer lost: %v), want 1", n, proxy.lost.Load())
			}
		})
	}
}

// Every attempt of one Elicit carries the same Idempotency-Key, a UUIDv7 as
// a structured-field string; two Elicits carry different keys. A 409 (the
// first attempt still being created) is sent again after a short pause.
func TestElicitSendsOneKeyPerQuestionAndRetriesConflicts(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	var conflicts atomic.Int64
	d := startDaemon(t, daemonConfig{wrap: intercept(isCreate, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if conflicts.Add(1) <= 2 {
			answerJSON(w, http.StatusConflict, `{"name":"Conflict","data":{"message":"A request with the same Idempotency-Key is still being created"}}`)
			return
		}
		next.ServeHTTP(w, r)
	})})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	held := holdPauses(t, c)
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	for range 2 {
		if delay := held.next(t); delay <= 0 || delay > 100*time.Millisecond {
			t.Fatalf("paused %v after a 409, want a short pause", delay)
		}
		held.release()
	}
	reject(t, d.URL, ops.asked(t).ID, "")
	if o := await(t, out); o.err != nil {
		t.Fatal(o.err)
	}
	if _, err := c.Create(t.Context(), deployForm(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 4 || keys[0] != keys[1] || keys[1] != keys[2] || keys[3] == keys[0] {
		t.Fatalf("keys %q: want one key for the 3 attempts of Elicit and another for Create", keys)
	}
	for _, k := range keys {
		id, err := uuid.Parse(strings.Trim(k, `"`))
		if !strings.HasPrefix(k, `"`) || err != nil || id.Version() != 7 {
			t.Fatalf("key %s is not a quoted UUIDv7", k)
		}
	}
}

// A 422 (the key used for another request) is the caller's error: returned,
// not retried.
func TestElicitReturnsAReusedKey(t *testing.T) {
	d := startDaemon(t, daemonConfig{wrap: func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			answerJSON(w, http.StatusUnprocessableEntity, `{"name":"UnprocessableContent","data":{"message":"The Idempotency-Key was already used for a different request"}}`)
		})
	}})
	c := newClient(t, d.URL, client.Options{})
	retries := refusePauses(c)
	_, err := c.Elicit(t.Context(), deployForm(t))
	var qe *client.Error
	if !errors.Is(err, client.ErrKeyReused) || !errors.As(err, &qe) || !strings.Contains(qe.Message, "Idempotency-Key") {
		t.Fatalf("Elicit returned %v, want ErrKeyReused with the server's message", err)
	}
	if retries.Load() != 0 {
		t.Fatal("a 422 was retried")
	}
}

// Cancelling Elicit while it is about to resend a create whose answer was
// lost withdraws the question the first attempt created.
func TestElicitCancelledBetweenAttemptsWithdrawsTheQuestion(t *testing.T) {
	d := startDaemon(t, daemonConfig{wrap: intercept(firstPost(), func(_ http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(discard{http.Header{}}, r)
		panic(http.ErrAbortHandler) // the answer never leaves
	})})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	held := holdPauses(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	out := elicitAsync(t, ctx, c, deployForm(t))
	q := ops.asked(t)
	held.next(t)
	cancel()
	if o := await(t, out); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("Elicit returned %+v, %v; want context.Canceled", o.res, o.err)
	}
	if f := ops.next(t, "question.rejected"); !strings.Contains(string(f.Properties), q.ID) {
		t.Fatalf("rejected %s, want %s", f.Properties, q.ID)
	}
	if list := pendingQuestions(t, d.URL); len(list) != 0 || d.created.Load() != 1 {
		t.Fatalf("pending %v, %d created; want the one question withdrawn", list, d.created.Load())
	}
}
