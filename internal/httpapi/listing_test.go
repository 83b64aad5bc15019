package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// freshList is GET /question's body for directory scope dir encoded from
// scratch: the store's pending questions in that scope as OpenCode
// QuestionRequests, as compact JSON without HTML escaping (OpenCode sends
// <, > and & as they are).
func freshList(t *testing.T, store *pending.Store, dir string) []byte {
	t.Helper()
	questions, err := store.List(context.Background(), pending.Filter{Directory: dir})
	if err != nil {
		t.Fatal(err)
	}
	type questionRequest struct {
		ID        string                `json:"id"`
		SessionID string                `json:"sessionID"`
		Questions []elicit.QuestionInfo `json:"questions"`
		Tool      *pending.Tool         `json:"tool,omitempty"`
	}
	items := make([]questionRequest, 0, len(questions))
	for _, q := range questions {
		items = append(items, questionRequest{ID: q.ID, SessionID: q.SessionID, Questions: q.Questions, Tool: q.Tool})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(items); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestListIsTheFreshEncodingInEveryScope changes the pending questions of
// three directories (and of none) every way they can change — asked,
// replied, rejected, withdrawn, timed out — and after each change compares
// GET /question in every scope, by query and by header, byte for byte with
// a fresh encoding of the store's list: kept list bodies and memoized items
// must never show a question that has ended or miss one just asked.
func TestListIsTheFreshEncodingInEveryScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	dirs := []string{"/home/alice/project", "/home/bob/other", ""}
	ask := func(dir, timeout string) string {
		f := seedForm()
		// HTML-significant text is sent as it is, in the list as in OpenCode.
		f["requestedSchema"] = json.RawMessage(`{"type":"object","properties":{` +
			`"model":{"type":"string","title":"<Model>","description":"Is <b> & </b> fine?","enum":["SY215C","SY365H"]},` +
			`"notes":{"type":"string","title":"Notes"}}}`)
		if dir != "" {
			f["directory"] = dir
		}
		if timeout != "" {
			f["timeout"] = timeout
		}
		return h.create(f).ID
	}
	checkAll := func(step string) {
		t.Helper()
		for _, dir := range append(dirs, "/elsewhere") {
			want := freshList(t, h.store, dir)
			paths := [][]string{{"/question?directory=" + url.QueryEscape(dir)}}
			if dir != "" {
				paths = append(paths, []string{"/question", "x-opencode-directory", url.PathEscape(dir)})
			}
			for _, p := range paths {
				for range 2 { // the second answer may come from what the first kept
					res := h.do(http.MethodGet, p[0], nil, p[1:]...)
					if res.Status != http.StatusOK || !bytes.Equal(res.Body, want) {
						t.Fatalf("%s: GET %v = %d\n%s\nwant\n%s", step, p, res.Status, res.Body, want)
					}
				}
			}
		}
	}

	var ids []string
	for range 3 {
		for _, dir := range dirs {
			ids = append(ids, ask(dir, ""))
			checkAll("after asking")
		}
	}
	if n := len(bytes.Split(freshList(t, h.store, ""), []byte(`"id":"que`))) - 1; n != len(ids) {
		t.Fatalf("%d questions listed, want %d", n, len(ids))
	}

	endings := []struct {
		name string
		end  func(id string) int
	}{
		{"replied", func(id string) int {
			return h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY215C"],["fine"]]}`).Status
		}},
		{"rejected", func(id string) int { return h.do(http.MethodPost, "/question/"+id+"/reject", nil).Status }},
		{"withdrawn", func(id string) int { return h.do(http.MethodDelete, "/elicitations/"+id, nil).Status }},
	}
	for i, id := range ids[:6] {
		e := endings[i%len(endings)]
		if status := e.end(id); status != http.StatusOK {
			t.Fatalf("%s %s: %d", e.name, id, status)
		}
		checkAll(e.name + " " + id)
	}

	// An ending the store makes on its own, with no request to see it.
	id := ask(dirs[0], "3s") // long enough that the checks below all run before it times out, even on a loaded machine
	checkAll("asked with a timeout")
	var ended struct{ Status, Ending string }
	h.do(http.MethodGet, "/elicitations/"+id+"?wait=10s", nil).json(t, &ended)
	if ended.Ending != string(pending.EndTimeout) {
		t.Fatalf("the question with a timeout: %+v, want it timed out", ended)
	}
	checkAll("timed out")
}

// question.asked carries the question as GET /question lists it, byte for
// byte — on a stream that was open when it was asked and in a new stream's
// first frames — with <, > and & as they are, as OpenCode sends them.
func TestAskedEventsAreTheListItems(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	live := h.openStream("/event")
	live.expect(t, "server.connected")
	f := seedForm()
	f["message"] = "Is <b> & </b> fine?"
	f["requestedSchema"] = json.RawMessage(`{"type":"object","properties":{` +
		`"model":{"type":"string","title":"<Model>","description":"A & B?","enum":["<a>","b&c"]}}}`)
	id := h.create(f).ID
	list := h.do(http.MethodGet, "/question", nil)
	var items []json.RawMessage
	if err := json.Unmarshal(list.Body, &items); err != nil || len(items) != 1 {
		t.Fatalf("GET /question: %v %s", err, list.Body)
	}
	item := items[0]
	if !bytes.Contains(item, []byte(`"<Model>"`)) || !bytes.Contains(item, []byte(`A & B?`)) {
		t.Fatalf("the list item escapes HTML: %s", item)
	}
	asked := live.expect(t, "question.asked")
	if !bytes.Equal(asked.Properties, item) {
		t.Errorf("live question.asked %s:\n%s\nwant the list item\n%s", id, asked.Properties, item)
	}
	late := h.openStream("/event")
	late.expect(t, "server.connected")
	replayed := late.expect(t, "question.asked")
	if !bytes.Equal(replayed.Properties, item) {
		t.Errorf("a new stream's question.asked %s:\n%s\nwant the list item\n%s", id, replayed.Properties, item)
	}
}
