package testkit

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Frame is one event of an event stream: its data lines joined by "\n".
type Frame struct {
	Event string
	ID    string
	Data  string
}

// Frames sends every frame of body to the returned channel (buffered by
// size), and closes it when body ends; body is closed then if it is an
// io.Closer. Comments and retry lines are left out; a last frame without
// its blank line is sent too.
func Frames(body io.Reader, size int) <-chan Frame {
	frames := make(chan Frame, size)
	go func() {
		defer close(frames)
		if c, ok := body.(io.Closer); ok {
			defer c.Close()
		}
		r := bufio.NewReaderSize(body, 64<<10)
		var f Frame
		var data []string
		send := func() {
			if data != nil || f.Event != "" {
				f.Data = strings.Join(data, "\n")
				frames <- f
			}
			f, data = Frame{}, nil
		}
		for {
			line, err := r.ReadString('\n')
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			switch name, value, _ := strings.Cut(line, ":"); {
			case line == "":
				send()
			case name == "data":
				data = append(data, strings.TrimPrefix(value, " "))
			case name == "event":
				f.Event = strings.TrimPrefix(value, " ")
			case name == "id":
				f.ID = strings.TrimPrefix(value, " ")
			}
			if err != nil {
				send()
				return
			}
		}
	}()
	return frames
}

// Events sends the data of every frame of body that is JSON for a T to
// the returned channel (buffered by size), and closes it when body ends
// (closing body as Frames does).
func Events[T any](body io.Reader, size int) <-chan T {
	events := make(chan T, size)
	go func() {
		defer close(events)
		for f := range Frames(body, 0) {
			var e T
			if json.Unmarshal([]byte(f.Data), &e) == nil {
				events <- e
			}
		}
	}()
	return events
}

// Next returns the next event from events that match accepts, skipping the
// others; it fails the test, naming the event as what, if none comes within
// timeout (a hang guard, not a speed limit) or the stream ends first.
func Next[T any](tb testing.TB, events <-chan T, timeout time.Duration, what string, match func(T) bool) T {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case e, ok := <-events:
			if !ok {
				tb.Fatalf("the stream ended before %s", what)
			}
			if match(e) {
				return e
			}
		case <-deadline.C:
			tb.Fatalf("no %s within %v", what, timeout)
		}
	}
}

// Data sends the data of every frame of body to the returned channel
// (buffered by size), and closes it when body ends (closing body as Frames
// does).
func Data(body io.Reader, size int) <-chan string {
	data := make(chan string, size)
	go func() {
		defer close(data)
		for f := range Frames(body, 0) {
			data <- f.Data
		}
	}()
	return data
}

// Event is an OpenCode event as the suites read it from GET /event: its
// type, the question it is about (properties.id of question.asked,
// properties.requestID of question.replied and question.rejected) and, for
// question.asked, the questions' text.
type Event struct {
	Type       string `json:"type"`
	Properties struct {
		ID        string `json:"id"`
		RequestID string `json:"requestID"`
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
	} `json:"properties"`
}

// OperatorEvents opens the event stream at url (GET /event) and sends its
// events to the returned channel (buffered for 64), which is closed when
// the stream ends; it fails the test unless the stream opens with 200.
func OperatorEvents(tb testing.TB, url string) <-chan Event {
	tb.Helper()
	res, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		tb.Fatalf("GET %s: %s", url, res.Status)
	}
	return Events[Event](res.Body, 64)
}
