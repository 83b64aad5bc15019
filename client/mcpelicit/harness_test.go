package mcpelicit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testserver"
)

// startDaemon runs a real questiond (memory store) for the test and returns
// its URL and a client of it.
func startDaemon(t *testing.T) (string, *client.Client) {
	t.Helper()
	server := testkit.Serve(t, testserver.Config{
		Events:      sse.Options{Heartbeat: time.Hour},
		Logger:      zaptest.NewLogger(t),
		DatabaseURL: databaseURL(t),
	})
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	c, err := client.New(client.Options{Server: server.URL, HTTPClient: &http.Client{Transport: transport}, PollWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return server.URL, c
}

// operator is a test operator on questiond's HTTP API.
type operator struct {
	t      *testing.T
	base   string
	frames chan frame
}

type frame struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

type question struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Questions []struct {
		Header string `json:"header"`
	} `json:"questions"`
}

// watch connects an operator to the event stream of base.
func watch(t *testing.T, base string) *operator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/event", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	o := &operator{t: t, base: base, frames: make(chan frame, 256)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(o.frames)
		for f := range testkit.Events[frame](res.Body, 0) {
			o.frames <- f
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return o
}

// next waits for the next event of type typ.
func (o *operator) next(typ string) frame {
	o.t.Helper()
	return testkit.Next(o.t, o.frames, 15*time.Second, typ, func(f frame) bool { return f.Type == typ })
}

// asked waits for the next question.
func (o *operator) asked() question {
	o.t.Helper()
	var q question
	if err := json.Unmarshal(o.next("question.asked").Properties, &q); err != nil {
		o.t.Fatal(err)
	}
	return q
}

// post sends an operator request and checks it got 200.
func (o *operator) post(path string, body any) {
	o.t.Helper()
	data, _ := json.Marshal(body)
	res, err := http.Post(o.base+path, "application/json", bytes.NewReader(data))
	if err != nil {
		o.t.Error(err)
		return
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		o.t.Errorf("POST %s: %d %s", path, res.StatusCode, got)
	}
}

// reply answers q, by question header, in whatever order questiond lists them.
func (o *operator) reply(q question, byHeader map[string][]string) {
	o.t.Helper()
	answers := make([][]string, len(q.Questions))
	for i, info := range q.Questions {
		a, ok := byHeader[info.Header]
		if !ok {
			o.t.Fatalf("no answer for question %q", info.Header)
		}
		answers[i] = a
	}
	o.post("/question/"+q.ID+"/reply", map[string]any{"answers": answers})
}

func (o *operator) reject(id, action string) {
	o.post("/question/"+id+"/reject", map[string]string{"action": action})
}

// pending lists the questions an operator of directory sees.
func (o *operator) pending(directory string) []question {
	o.t.Helper()
	res, err := http.Get(o.base + "/question?directory=" + directory)
	if err != nil {
		o.t.Fatal(err)
	}
	defer res.Body.Close()
	var list []question
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		o.t.Fatal(err)
	}
	return list
}
