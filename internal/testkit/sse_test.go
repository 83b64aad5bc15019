package testkit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testkit"
)

func TestFramesAndEvents(t *testing.T) {
	stream := ": comment\nretry: 10\n\nid: 1\nevent: x\ndata: {\"type\":\"a\",\n" +
		"data: \"n\":1}\n\ndata: {\"type\":\"b\",\"n\":2}\r\n\r\ndata: not json\n\ndata: {\"type\":\"c\",\"n\":3}"
	var frames []testkit.Frame
	for f := range testkit.Frames(strings.NewReader(stream), 0) {
		frames = append(frames, f)
	}
	want := []testkit.Frame{{"x", "1", "{\"type\":\"a\",\n\"n\":1}"}, {"", "", `{"type":"b","n":2}`}, {"", "", "not json"}, {"", "", `{"type":"c","n":3}`}}
	if len(frames) != len(want) {
		t.Fatalf("frames %q, want %q", frames, want)
	}
	for i := range want {
		if frames[i] != want[i] {
			t.Errorf("frame %d = %q, want %q", i, frames[i], want[i])
		}
	}
	var data []string
	for d := range testkit.Data(strings.NewReader(stream), 0) {
		data = append(data, d)
	}
	if strings.Join(data, "|") != "{\"type\":\"a\",\n\"n\":1}|{\"type\":\"b\",\"n\":2}|not json|{\"type\":\"c\",\"n\":3}" {
		t.Errorf("data %q", data)
	}
	type event struct {
		Type string
		N    int
	}
	events := testkit.Events[event](strings.NewReader(stream), 8)
	if e := testkit.Next(t, events, time.Second, "b", func(e event) bool { return e.Type == "b" }); e.N != 2 {
		t.Fatalf("next b = %+v", e)
	}
	if e := <-events; e.Type != "c" {
		t.Fatalf("after b: %+v", e)
	}
}
