package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testkit"
)

// keyedPost is POST /elicitations of body under Idempotency-Key key.
func keyedPost(t *testing.T, base, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/elicitations", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	status, data := testkit.Do(t, http.DefaultClient, req)
	return status, string(data)
}

// The Idempotency-Key of a result evicted by --max-retained is remembered
// across a restart of the durable store: the retry after the restart is
// 410 QuestionGoneError naming the question, not a second question.
func TestForgottenKeySurvivesRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	base, stop := startDaemon(t, nil, "--data-dir", dataDir, "--max-retained", "1")
	status, body := keyedPost(t, base, "retry-me", twoQuestions)
	var first struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &first) != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := sendJSON(t, http.MethodDelete, base+"/elicitations/"+first.ID, ""); status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", status, body)
	}
	// One more result evicts the first (--max-retained 1).
	status, body = sendJSON(t, http.MethodPost, base+"/elicitations", twoQuestions)
	var second struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &second) != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := sendJSON(t, http.MethodDelete, base+"/elicitations/"+second.ID, ""); status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", status, body)
	}
	if status, body := keyedPost(t, base, "retry-me", twoQuestions); status != http.StatusGone {
		t.Fatalf("retry before the restart: %d %s; want 410", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	again, _ := startDaemon(t, nil, "--data-dir", dataDir, "--max-retained", "1")
	status, body = keyedPost(t, again, "retry-me", twoQuestions)
	var gone struct {
		Name string
		Data struct{ RequestID string }
	}
	if status != http.StatusGone || json.Unmarshal([]byte(body), &gone) != nil || gone.Name != "QuestionGoneError" || gone.Data.RequestID != first.ID {
		t.Fatalf("retry after a restart: %d %s; want 410 QuestionGoneError naming %s", status, body, first.ID)
	}
	if status, body := sendJSON(t, http.MethodGet, again+"/question", ""); status != http.StatusOK || body != "[]" {
		t.Fatalf("pending after the retry: %d %s; want none", status, body)
	}
}

// gatedProxy forwards HTTP to backend, except that the answer to the first
// POST /elicitations is lost (the connection is cut once the daemon has
// created the question), and every later request waits for open.
type gatedProxy struct {
	URL  string
	open chan struct{}
}

func startGatedProxy(t *testing.T, backend string) *gatedProxy {
	t.Helper()
	target, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	p := &gatedProxy{open: make(chan struct{})}
	var posts atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/elicitations" && posts.Add(1) == 1 {
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			panic(http.ErrAbortHandler) // created, and the answer is lost
		}
		select {
		case <-p.open:
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		select {
		case <-p.open:
		default:
			close(p.open)
		}
		ts.Close()
	})
	p.URL = ts.URL
	return p
}

// `questiond ask` whose create answer is lost, and whose question ends and
// is forgotten before its retry arrives, exits 5 naming the 410: the
// operator's answer is lost, and nothing is asked twice.
func TestAskExitsGoneWhenItsResultWasForgotten(t *testing.T) {
	t.Parallel()
	d := startProcess(t, "--store", "memory", "--retention", "100ms")
	proxy := startGatedProxy(t, d.base)
	a := startAsk(t, nil, "", "--server", proxy.URL, "--message", "Ship it?", "--confirm")
	q := awaitQuestion(t, d, a, "")
	operator(t, d, "/question/"+q.ID+"/reply", `{"answers":[["Yes"]]}`)
	time.Sleep(300 * time.Millisecond) // past --retention: the result is forgotten
	close(proxy.open)
	if status := a.wait(t); status != 5 {
		t.Fatalf("exit %d, want 5; stderr: %s", status, a.stderr.String())
	}
	if !strings.Contains(a.stderr.String(), "410 QuestionGoneError") || !strings.Contains(a.stderr.String(), q.ID) {
		t.Fatalf("stderr %q does not name the 410 and the question", a.stderr.String())
	}
	if left := pendingQuestions(t, d, ""); len(left) != 0 {
		t.Fatalf("%d questions pending, want none: the retry asked again", len(left))
	}
}
