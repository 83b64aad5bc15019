package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// recordingWatcher records what it hears; hold, if set, blocks Asked until
// it is closed, standing for a watcher caught mid-call.
type recordingWatcher struct {
	mu    sync.Mutex
	heard []string
	asked chan string
	hold  chan struct{}
}

func (w *recordingWatcher) Asked(q *pending.Question) {
	w.asked <- q.ID
	if w.hold != nil {
		<-w.hold
	}
	w.mu.Lock()
	w.heard = append(w.heard, "asked "+q.ID)
	w.mu.Unlock()
}

func (w *recordingWatcher) Ended(q *pending.Question) {
	w.mu.Lock()
	w.heard = append(w.heard, "ended "+q.ID+" "+string(q.Ended.Ending))
	w.mu.Unlock()
}

func (w *recordingWatcher) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.heard, "; ")
}

// watchedServer is questiond with w listening after its Events.
func watchedServer(t *testing.T, w ask.Listener) string {
	t.Helper()
	log := zaptest.NewLogger(t)
	bus, err := sse.New(sse.Options{Heartbeat: time.Hour, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	events := httpapi.NewEvents(bus, log)
	announce := ask.NewAnnouncements(log, events, w)
	store := pending.New(pending.Options{OnEnd: announce.Ended})
	opts := httpapi.Options{Logger: log}
	questions, err := ask.New(store, nil, announce, httpapi.AskOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(questions, events, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		api.Questions().Drain()
		_, _ = store.SettleAll(ctx, pending.Outcome{Ending: pending.EndShutdown, Result: pending.Result{Action: pending.ActionCancel}})
		_ = api.Questions().Release(ctx)
		_ = bus.Close(ctx)
		srv.Close()
		_ = store.Close(ctx)
	})
	return srv.URL
}

func post(t *testing.T, url, body string, header ...string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Error(err)
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Errorf("POST %s: %d %s", url, res.StatusCode, data)
	}
	return data
}

// waitEnded polls until the store says id has ended.
func waitEnded(t *testing.T, base, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/elicitations/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Status string }
		_ = json.NewDecoder(res.Body).Decode(&e)
		res.Body.Close()
		if e.Status != "" && e.Status != "pending" {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s did not end", id)
}

const watchedForm = `{"message":"Go?","requestedSchema":{"type":"object","properties":{"go":{"type":"boolean"}}}}`

// A watcher hears every question asked and every ending once, each ending
// after its question's Asked has returned, even when the operator answers
// while Asked is still running.
func TestWatcherHearsAskedBeforeEnded(t *testing.T) {
	t.Parallel()
	w := &recordingWatcher{asked: make(chan string, 10), hold: make(chan struct{})}
	base := watchedServer(t, w)
	created := make(chan string, 1)
	go func() {
		var c struct{ ID string }
		_ = json.Unmarshal(post(t, base+"/elicitations", watchedForm), &c)
		created <- c.ID
	}()
	id := <-w.asked // stored and published; the watcher is held mid-Asked
	replied := make(chan struct{})
	go func() {
		defer close(replied)
		post(t, base+"/question/"+id+"/reply", `{"answers":[["Yes"]]}`)
	}()
	waitEnded(t, base, id) // the store has ended it: its OnEnd is under way
	select {
	case <-replied:
		t.Fatal("the reply returned while the question's Asked was still running")
	default:
	}
	if got := w.log(); got != "" {
		t.Fatalf("heard %q before Asked returned", got)
	}
	close(w.hold)
	<-replied
	if <-created != id {
		t.Fatal("another question was created")
	}
	if got, want := w.log(), "asked "+id+"; ended "+id+" replied"; got != want {
		t.Fatalf("heard %q, want %q", got, want)
	}
}

// With an OpenCode TUI attached, endings take the console's path; watchers
// still hear each one once.
func TestWatcherHearsEndingsWithAConsoleAttached(t *testing.T) {
	t.Parallel()
	w := &recordingWatcher{asked: make(chan string, 10)}
	base := watchedServer(t, w)
	req, _ := http.NewRequest(http.MethodGet, base+"/event", nil)
	req.Header.Set("User-Agent", tuiUserAgent)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ids []string
	for range 2 {
		var c struct{ ID string }
		_ = json.Unmarshal(post(t, base+"/elicitations", watchedForm), &c)
		ids = append(ids, c.ID)
	}
	post(t, base+"/question/"+ids[0]+"/reject", `{}`)
	post(t, base+"/question/"+ids[1]+"/reply", `{"answers":[["No"]]}`)
	want := "asked " + ids[0] + "; asked " + ids[1] + "; ended " + ids[0] + " rejected; ended " + ids[1] + " replied"
	if got := w.log(); got != want {
		t.Fatalf("heard %q, want %q", got, want)
	}
}
