package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/httpapi"
)

// A daemon restart in the middle of a wait: the durable store keeps the
// question, the client resumes by its id on the new daemon, and the answer
// given there arrives. Exactly one question is ever created.
func TestElicitSurvivesADaemonRestart(t *testing.T) {
	path := boltPath(t)
	created := new(atomic.Int64)
	first := startDaemon(t, daemonConfig{boltPath: path, created: created})
	c := newClient(t, first.URL, client.Options{})
	held := holdPauses(t, c)
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	asked := watch(t, first.URL).asked(t)

	first.stop() // the long-poll is let go with the question still pending
	held.next(t)
	held.release() // the client tries again while nothing listens
	held.next(t)
	second := startDaemon(t, daemonConfig{boltPath: path, created: created, addr: first.Addr})
	ops := watch(t, second.URL)
	held.openAll()

	q := ops.asked(t) // announced again by the new daemon
	if q.ID != asked.ID {
		t.Fatalf("the new daemon asks %s, want the same question %s", q.ID, asked.ID)
	}
	reply(t, second.URL, q.ID, []string{"api"}, []string{"4"}, []string{"0.5"}, []string{"No"}, []string{"Ireland"}, []string{})
	o := await(t, out)
	if o.err != nil {
		t.Fatal(o.err)
	}
	replicas, err := o.res.Int("replicas")
	check(t, err, replicas == 4, "replicas %d", replicas)
	if _, err := o.res.Strings("tags"); err == nil {
		t.Fatal("an unanswered optional property reads as present")
	}
	if list := pendingQuestions(t, second.URL); len(list) != 0 {
		t.Fatalf("%d questions still pending", len(list))
	}
	second.stop()
	if n, records := created.Load(), journalCount(t, path); n != 1 || records != 1 {
		t.Fatalf("%d questions created, %d in the journal; want exactly 1", n, records)
	}
}

// A proxy between agent and daemon cuts every long-poll (once with a reset):
// the client keeps resuming by id and gets the answer, having asked once.
func TestElicitSurvivesDroppedConnections(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	proxy := startCuttingProxy(t, d.Addr, 50*time.Millisecond)
	ops := watch(t, d.URL)
	c := newClient(t, proxy.URL, client.Options{PollWait: 10 * time.Second, MaxBackoff: 20 * time.Millisecond})
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	q := ops.asked(t)

	kinds := map[string]int{}
	for range 4 {
		select {
		case how := <-proxy.cuts:
			kinds[how]++
		case <-time.After(15 * time.Second):
			t.Fatalf("the proxy cut only %v", kinds)
		}
	}
	if kinds["reset"] != 1 || kinds["close"] < 3 {
		t.Fatalf("cuts %v, want one reset and closes", kinds)
	}
	reply(t, d.URL, q.ID, []string{"api"}, []string{"2"}, []string{"1"}, []string{"Yes"}, []string{"Ireland"}, []string{"cache"})
	o := await(t, out)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if tags, err := o.res.Strings("tags"); err != nil || len(tags) != 1 || tags[0] != "cache" {
		t.Fatalf("tags %q, %v", tags, err)
	}
	if n := d.created.Load(); n != 1 {
		t.Fatalf("%d questions created, want 1", n)
	}
}

// After a restart that lost the question (a new store, or beyond the
// retention), waiting ends with ErrNotFound instead of retrying forever.
func TestElicitReportsAQuestionLostInARestart(t *testing.T) {
	first := startDaemon(t, daemonConfig{boltPath: boltPath(t)})
	c := newClient(t, first.URL, client.Options{})
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	watch(t, first.URL).asked(t)
	first.stop()
	startDaemon(t, daemonConfig{boltPath: boltPath(t), addr: first.Addr})
	o := await(t, out)
	if !errors.Is(o.err, client.ErrNotFound) {
		t.Fatalf("Elicit returned %v, want ErrNotFound", o.err)
	}
}

// The POST is sent again when the connection was refused: nothing was sent.
func TestElicitRetriesARefusedCreate(t *testing.T) {
	addr := freeAddr(t)
	c := newClient(t, "http://"+addr, client.Options{})
	held := holdPauses(t, c)
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	held.next(t) // refused
	d := startDaemon(t, daemonConfig{addr: addr})
	ops := watch(t, d.URL)
	held.openAll()
	reject(t, d.URL, ops.asked(t).ID, "decline")
	if o := await(t, out); o.err != nil || o.res.Action != client.ActionDecline {
		t.Fatalf("Elicit returned %+v, %v", o.res, o.err)
	}
	if n := d.created.Load(); n != 1 {
		t.Fatalf("%d questions created, want 1", n)
	}
}

// A draining daemon answers 503 and creates nothing: the POST is sent again,
// here to the daemon that replaced it.
func TestElicitRetriesACreateRefusedByADrainingDaemon(t *testing.T) {
	path := boltPath(t)
	created := new(atomic.Int64)
	draining := startDaemon(t, daemonConfig{boltPath: path, created: created})
	draining.api.Questions().Drain()
	c := newClient(t, draining.URL, client.Options{})
	held := holdPauses(t, c)
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	held.next(t) // 503
	draining.stop()
	d := startDaemon(t, daemonConfig{boltPath: path, created: created, addr: draining.Addr})
	ops := watch(t, d.URL)
	held.openAll()
	reject(t, d.URL, ops.asked(t).ID, "")
	if o := await(t, out); o.err != nil || o.res.Action != client.ActionCancel {
		t.Fatalf("Elicit returned %+v, %v", o.res, o.err)
	}
	if n := created.Load(); n != 1 {
		t.Fatalf("%d questions created, want 1", n)
	}
}

// A 429 with Retry-After is sent again after that time; one without (too
// many pending questions, freed only by answers) is returned.
func TestElicitHonoursRetryAfter(t *testing.T) {
	d := startDaemon(t, daemonConfig{wrap: intercept(firstPost(), func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		w.Header().Set("Retry-After", "7")
		answerJSON(w, http.StatusTooManyRequests, `{"name":"TooManyRequests","data":{"message":"too many requests; try again in 7 seconds"}}`)
	})})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	held := holdPauses(t, c)
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	if delay := held.next(t); delay != 7*time.Second {
		t.Fatalf("waited %v after Retry-After: 7", delay)
	}
	held.openAll()
	reject(t, d.URL, ops.asked(t).ID, "")
	if o := await(t, out); o.err != nil {
		t.Fatal(o.err)
	}
	if n := d.created.Load(); n != 1 {
		t.Fatalf("%d questions created, want 1", n)
	}
}

func TestElicitReturnsTooManyPendingQuestions(t *testing.T) {
	d := startDaemon(t, daemonConfig{api: httpapi.Options{Limits: httpapi.Limits{MaxPending: 1}}})
	c := newClient(t, d.URL, client.Options{})
	retries := refusePauses(c)
	if _, err := c.Create(t.Context(), deployForm(t)); err != nil {
		t.Fatal(err)
	}
	_, err := c.Elicit(t.Context(), deployForm(t))
	var qe *client.Error
	if !errors.Is(err, client.ErrTooMany) || !errors.As(err, &qe) || qe.Message == "" {
		t.Fatalf("Elicit returned %v, want ErrTooMany with the server's message", err)
	}
	if retries.Load() != 0 {
		t.Fatal("a 429 without Retry-After was retried")
	}
}

// A connection reset after the POST went out leaves it unknown whether the
// question exists: Elicit sends the POST again under the same
// Idempotency-Key, gets the question the first attempt created, and its
// answer. One question is asked.
func TestElicitResendsACreateWhoseAnswerWasReset(t *testing.T) {
	d := startDaemon(t, daemonConfig{wrap: intercept(firstPost(), func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		next.ServeHTTP(discard{http.Header{}}, r) // the question is created…
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		raw := conn
		if wrapped, ok := raw.(interface{ NetConn() net.Conn }); ok {
			raw = wrapped.NetConn() // the daemon's connection guard
		}
		_ = raw.(*net.TCPConn).SetLinger(0)
		_ = conn.Close() // …and the answer is lost to a reset
	})})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	held := holdPauses(t, c)
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	q := ops.asked(t)
	held.next(t) // the reset
	if list := pendingQuestions(t, d.URL); len(list) != 1 || list[0].ID != q.ID {
		t.Fatalf("pending %v, want only %s", list, q.ID)
	}
	held.openAll()
	reject(t, d.URL, q.ID, "decline")
	if o := await(t, out); o.err != nil || o.res.Action != client.ActionDecline {
		t.Fatalf("Elicit returned %+v, %v", o.res, o.err)
	}
	if n := d.created.Load(); n != 1 {
		t.Fatalf("%d questions created, want 1", n)
	}
}

// discard is a ResponseWriter that drops the answer.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// 5xx answers while waiting (a proxy with the daemon away) are retried.
func TestWaitRetriesServerErrors(t *testing.T) {
	var failures atomic.Int64
	d := startDaemon(t, daemonConfig{wrap: intercept(
		func(r *http.Request) bool { return isPoll(r) && failures.Add(1) <= 3 },
		func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
			http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
		})})
	ops := watch(t, d.URL)
	c := newClient(t, d.URL, client.Options{})
	held := holdPauses(t, c)
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	q := ops.asked(t)
	var delays []time.Duration
	for range 3 {
		delays = append(delays, held.next(t))
		held.release()
	}
	reply(t, d.URL, q.ID, []string{"api"}, []string{"2"}, []string{"1"}, []string{"Yes"}, []string{"Ireland"}, []string{})
	if o := await(t, out); o.err != nil || !o.res.Accepted() {
		t.Fatalf("Elicit returned %+v, %v", o.res, o.err)
	}
	for i, d := range delays {
		if d <= 0 || d > 100*time.Millisecond {
			t.Fatalf("pause %d was %v, want within (0, MaxBackoff]", i, d)
		}
	}
}

// A 4xx while waiting is final: no retry.
func TestWaitDoesNotRetryClientErrors(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	c := newClient(t, d.URL, client.Options{})
	retries := refusePauses(c)
	if _, err := c.Wait(t.Context(), "not-a-question"); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("Wait returned %v, want ErrBadRequest", err)
	}
	if _, err := c.Wait(t.Context(), "que_gone"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Wait returned %v, want ErrNotFound", err)
	}
	if retries.Load() != 0 {
		t.Fatal("a 4xx was retried")
	}
}

// Wait does not withdraw: after its ctx ends the question is still pending
// and can be waited for again.
func TestWaitCancelKeepsTheQuestion(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	c := newClient(t, d.URL, client.Options{})
	e, err := c.Create(t.Context(), deployForm(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(ctx, e.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait returned %v, want DeadlineExceeded", err)
	}
	if list := pendingQuestions(t, d.URL); len(list) != 1 || list[0].ID != e.ID {
		t.Fatalf("pending %v, want %s", list, e.ID)
	}
}
