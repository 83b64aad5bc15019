package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// Operator is a test's operator on a questiond's OpenCode API: it watches
// GET /event from the start and answers with POST /question/{id}/reply and
// /reject.
type Operator struct {
	tb     testing.TB
	base   string
	frames chan OperatorFrame
}

// OperatorFrame is one event of the operator's stream.
type OperatorFrame struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// Question is a question as operators see it (question.asked, GET /question).
type Question struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Questions []struct {
		Header   string `json:"header"`
		Question string `json:"question"`
	} `json:"questions"`
}

// Watch connects an operator to the event stream of the questiond at base;
// the stream closes when the test ends.
func Watch(tb testing.TB, base string) *Operator {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/event", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	o := &Operator{tb: tb, base: base, frames: make(chan OperatorFrame, 256)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(o.frames)
		for f := range Events[OperatorFrame](res.Body, 0) {
			o.frames <- f
		}
	}()
	tb.Cleanup(func() { cancel(); <-done })
	return o
}

// Next waits for the next event of type typ, skipping others.
func (o *Operator) Next(typ string) OperatorFrame {
	o.tb.Helper()
	return Next(o.tb, o.frames, 15*time.Second, typ, func(f OperatorFrame) bool { return f.Type == typ })
}

// Asked waits for the next question.
func (o *Operator) Asked() Question {
	o.tb.Helper()
	var q Question
	if err := json.Unmarshal(o.Next("question.asked").Properties, &q); err != nil {
		o.tb.Fatal(err)
	}
	return q
}

// Post sends an operator request and checks it got 200.
func (o *Operator) Post(path string, body any) {
	o.tb.Helper()
	data, _ := json.Marshal(body)
	res, err := http.Post(o.base+path, "application/json", bytes.NewReader(data))
	if err != nil {
		o.tb.Error(err)
		return
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		o.tb.Errorf("POST %s: %d %s", path, res.StatusCode, got)
	}
}

// Reply answers q by question header, in whatever order questiond lists
// them.
func (o *Operator) Reply(q Question, byHeader map[string][]string) {
	o.tb.Helper()
	answers := make([][]string, len(q.Questions))
	for i, info := range q.Questions {
		a, ok := byHeader[info.Header]
		if !ok {
			o.tb.Fatalf("no answer for question %q", info.Header)
		}
		answers[i] = a
	}
	o.Post("/question/"+q.ID+"/reply", map[string]any{"answers": answers})
}

// Reject ends question id with action ("decline" or "cancel").
func (o *Operator) Reject(id, action string) {
	o.tb.Helper()
	o.Post("/question/"+id+"/reject", map[string]string{"action": action})
}

// Pending lists the questions an operator of directory sees ("" for all).
func (o *Operator) Pending(directory string) []Question {
	o.tb.Helper()
	u := o.base + "/question"
	if directory != "" {
		u += "?directory=" + url.QueryEscape(directory)
	}
	res, err := http.Get(u)
	if err != nil {
		o.tb.Fatal(err)
	}
	defer res.Body.Close()
	var list []Question
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		o.tb.Fatal(err)
	}
	return list
}
