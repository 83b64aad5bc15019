package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/notify"
)

const oneQuestion = `{"message":"Deploy?","requestedSchema":{"type":"object","properties":{"go":{"type":"boolean"}},"required":["go"]}}`

// serve starts d and returns its base URL and a stop function, also run at
// cleanup.
func serve(t *testing.T, cfg daemon.Config) (string, func()) {
	t.Helper()
	d, err := daemon.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	t.Cleanup(stop)
	return "http://" + d.Addr().String(), stop
}

// call sends body and decodes the answer into out, within limit: a request
// that waits for a webhook fails here.
func call(t *testing.T, limit time.Duration, method, url, body string, out any) time.Duration {
	t.Helper()
	client := &http.Client{Timeout: limit}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, data)
		}
	}
	return time.Since(start)
}

// A webhook that takes the request and never answers costs the agent and
// the operator nothing: asking, listing and replying answer well within one
// delivery attempt (10 s), while the webhook still holds the first POST.
func TestHangingWebhookDelaysNoAskOrReply(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hook.Close()
	defer close(release)
	cfg := config(t)
	cfg.Notify = notify.Options{URLs: []string{hook.URL}, Grace: 100 * time.Millisecond}
	base, stop := serve(t, cfg)
	limit := 2 * time.Second // a fifth of one attempt's timeout
	for i := range 3 {
		var created struct{ ID string }
		asked := call(t, limit, "POST", base+"/elicitations", oneQuestion, &created)
		replied := call(t, limit, "POST", base+"/question/"+created.ID+"/reply", `{"answers":[["Yes"]]}`, nil)
		t.Logf("round %d with a hanging webhook: ask %s, reply %s", i, asked, replied)
	}
	if posts.Load() != 1 {
		t.Errorf("the webhook got %d requests, want the one it holds", posts.Load())
	}
	start := time.Now()
	stop()
	if spent := time.Since(start); spent > 5*time.Second {
		t.Errorf("shutdown took %s with a hanging webhook", spent)
	}
}

// With the durable store, what a webhook refused until questiond stopped is
// delivered by the next start, under the same event id.
func TestRestartDeliversPendingNotifications(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	got := make(chan http.Header, 100)
	bodies := make(chan string, 100)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		if !up.Load() {
			got <- r.Header.Clone()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		bodies <- r.Header.Get(notify.HeaderEventID) + " " + string(data)
	}))
	defer hook.Close()
	cfg := config(t)
	cfg.Notify = notify.Options{URLs: []string{hook.URL + "/hook"}, MinBackoff: time.Hour, Grace: 50 * time.Millisecond}
	base, stop := serve(t, cfg)
	var created struct{ ID string }
	call(t, 5*time.Second, "POST", base+"/elicitations", oneQuestion, &created)
	var first http.Header
	select {
	case first = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook got nothing")
	}
	stop()

	up.Store(true)
	serve(t, cfg)
	select {
	case b := <-bodies:
		id, body, _ := strings.Cut(b, " ")
		if id != first.Get(notify.HeaderEventID) || !strings.Contains(body, fmt.Sprintf(`"id":"%s"`, created.ID)) {
			t.Fatalf("after the restart got %s %s, want event %s", id, body, first.Get(notify.HeaderEventID))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered after the restart")
	}
}

// The memory store ends every pending question at shutdown; webhooks hear
// of those endings before questiond exits.
func TestShutdownEndingsAreNotified(t *testing.T) {
	t.Parallel()
	bodies := make(chan notify.Body, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b notify.Body
		_ = json.NewDecoder(r.Body).Decode(&b)
		bodies <- b
	}))
	defer hook.Close()
	cfg := config(t)
	cfg.BoltPath = ""
	cfg.Notify = notify.Options{URLs: []string{hook.URL}}
	base, stop := serve(t, cfg)
	var created struct{ ID string }
	call(t, 5*time.Second, "POST", base+"/elicitations", oneQuestion, &created)
	stop()
	var events []string
	for len(bodies) > 0 {
		b := <-bodies
		if b.Link != base+"/ui" {
			t.Errorf("link %q, want the listener's /ui page %s/ui", b.Link, base)
		}
		if b.Question.ID == created.ID {
			ending := ""
			if b.Ending != nil {
				ending = string(b.Ending.Ending)
			}
			events = append(events, b.Event+" "+ending)
		}
	}
	if strings.Join(events, ",") != "question.asked ,question.ended shutdown" {
		t.Fatalf("the webhook heard %q before questiond stopped", events)
	}
}
