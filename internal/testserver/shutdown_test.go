package testserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
	"github.com/questiond/questiond/internal/testserver"
)

// event is one frame of an operator's stream.
type event = testkit.Event

// operatorStream reads GET /event until the stream ends; the channel gets
// every event and is closed at the end.
func operatorStream(t *testing.T, s *testserver.Server) <-chan event {
	t.Helper()
	return testkit.OperatorEvents(t, s.URL+"/event")
}

// nextOf returns the next event of type typ.
func nextOf(t *testing.T, events <-chan event, typ string) event {
	t.Helper()
	return testkit.Next(t, events, 10*time.Second, typ, func(e event) bool { return e.Type == typ })
}

// Defect: with the durable store, an MCP tool call's question was withdrawn
// after the event broker had closed, so the ending was journaled but
// operators never got question.rejected, and their TUIs kept a question
// nobody could answer.
func TestStopAnnouncesTheWithdrawalOfWaitingMCPToolCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "questiond.db")
	s := start(t, testserver.Config{BoltPath: path, Bolt: pending.BoltOptions{NoSync: true}})
	events := operatorStream(t, s)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs := mcptest.Connect(t, ctx, s.URL+"/mcp?session=ses_alpha")
	called := make(chan error, 1)
	go func() {
		res, err := mcptest.AskDeployNow(ctx, cs)
		if err == nil && !res.IsError {
			t.Errorf("the tool call succeeded across a shutdown: %+v", res)
		}
		called <- err
	}()
	id := nextOf(t, events, "question.asked").Properties.ID

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if e := nextOf(t, events, "question.rejected"); e.Properties.RequestID != id {
		t.Fatalf("question.rejected for %s, want %s", e.Properties.RequestID, id)
	}
	<-called

	again := start(t, testserver.Config{BoltPath: path, Bolt: pending.BoltOptions{NoSync: true}})
	if status, body := send(t, http.MethodGet, again.URL+"/question", ""); status != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Fatalf("GET /question after the restart: %d %s, want no pending question", status, body)
	}
	status, body := send(t, http.MethodGet, again.URL+"/elicitations/"+id, "")
	if status != http.StatusOK || !strings.Contains(body, `"status":"resolved"`) {
		t.Fatalf("the withdrawn question after the restart: %d %s", status, body)
	}
}

// gatedStore parks the first Create until the test lets it go.
type gatedStore struct {
	ask.QuestionStore
	entered chan struct{} // buffered: the first Create need not find the test waiting
	proceed chan struct{}
	first   sync.Once
}

func (g *gatedStore) Create(ctx context.Context, q *pending.Question) error {
	// Only the first is parked. (With an unbuffered entered and a default
	// case, a Create that came before the test waited on entered went by
	// unparked, and the test waited for ever.)
	g.first.Do(func() {
		g.entered <- struct{}{}
		<-g.proceed
	})
	return g.QuestionStore.Create(ctx, q)
}

// Defect: with the memory store, a create that had got past the door while
// Stop began stored its question after Stop had ended every pending one;
// its agent was told 503 "stays pending, collect it with GET …" and the
// question was then ended and forgotten, its events never sent. Whatever
// the interleaving, the agent's answer and what operators see must agree.
func TestACreateUnderWayWhenStopBeginsIsAnsweredConsistently(t *testing.T) {
	gate := &gatedStore{entered: make(chan struct{}, 1), proceed: make(chan struct{})}
	s := start(t, testserver.Config{WrapStore: func(st ask.QuestionStore) ask.QuestionStore {
		gate.QuestionStore = st
		return gate
	}})
	events := operatorStream(t, s)
	nextOf(t, events, "server.connected")

	agent := testkit.PostAsync(s.URL+"/elicit", form)
	<-gate.entered // the create is past the door, before its question is stored

	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop() }()
	// Let the create go on once the server refuses new questions: Stop has begun.
	for !refusesNewQuestions(s) {
		time.Sleep(time.Millisecond) // waiting for Stop's first step; nothing to synchronise on from outside
	}
	close(gate.proceed)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	answer := <-agent
	got := struct {
		status   int
		id, body string
	}{answer.Status, answer.Header.Get("X-Questiond-Request-Id"), strings.TrimSpace(answer.Body)}
	var seen []event
	for e := range events {
		seen = append(seen, e)
	}
	announced := func(typ, id string) int {
		for i, e := range seen {
			if e.Type == typ && (e.Properties.ID == id || e.Properties.RequestID == id) {
				return i
			}
		}
		return -1
	}
	switch {
	case got.status == http.StatusOK:
		asked, rejected := announced("question.asked", got.id), announced("question.rejected", got.id)
		if got.body != `{"action":"cancel"}` || asked < 0 || rejected < asked {
			t.Fatalf("the agent got 200 %s for %s; operators saw %+v: want cancel, announced then rejected", got.body, got.id, seen)
		}
	case got.status == http.StatusServiceUnavailable:
		if strings.Contains(got.body, "stays pending") {
			t.Fatalf("the memory store forgets every question on shutdown, yet the agent was told: %s", got.body)
		}
		for _, e := range seen {
			if e.Type == "question.asked" {
				t.Fatalf("the agent was refused (%s), yet operators were asked %+v", got.body, e)
			}
		}
	default:
		t.Fatalf("the agent got %d %s", got.status, got.body)
	}
}

// refusesNewQuestions reports whether the API answers a new elicitation with
// 503, asking it directly so no connection is needed.
func refusesNewQuestions(s *testserver.Server) bool {
	req := httptest.NewRequest(http.MethodPost, "/elicitations", strings.NewReader(`{}`))
	req.Host = s.Addr
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.API.ServeHTTP(rec, req)
	return rec.Code == http.StatusServiceUnavailable
}
