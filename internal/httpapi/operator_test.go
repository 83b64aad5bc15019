package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

func TestReplyErrorsFollowOpenCode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	id := h.create(seedForm()).ID
	unknown := "que_00000000000000000000000000"
	notFound := `{"_tag":"QuestionNotFoundError","requestID":"` + unknown + `","message":"Question request not found: ` + unknown + `"}`
	cases := []struct {
		name, path, body string
		headers          []string
		status           int
		want             string // exact body, or a prefix ending in "…"
	}{
		{"unknown id", "/question/" + unknown + "/reply", `{"answers":[]}`, nil, 404, notFound},
		{"id without que", "/question/abc123/reply", `{"answers":[]}`, nil, 400,
			`{"name":"BadRequest","data":{"message":"Expected a string starting with \"que\", got \"abc123\"\n  at [\"requestID\"]","kind":"Params"}}`},
		{"bad body beats unknown id", "/question/" + unknown + "/reply", `{}`, nil, 400,
			`{"name":"BadRequest","data":{"message":"Missing key\n  at [\"answers\"]","kind":"Payload"}}`},
		{"no content type", "/question/" + unknown + "/reply", `{"answers":[]}`, []string{"Content-Type", ""}, 404, notFound},
		{"empty body", "/question/" + id + "/reply", ``, nil, 400,
			`{"name":"BadRequest","data":{"message":"Expected object, got undefined","kind":"Payload"}}`},
		{"answers not array", "/question/" + id + "/reply", `{"answers":"SY215C"}`, nil, 400,
			`{"name":"BadRequest","data":{"message":"Expected array, got \"SY215C\"\n  at [\"answers\"]","kind":"Payload"}}`},
		{"flat strings", "/question/" + id + "/reply", `{"answers":["SY215C"]}`, nil, 400,
			`{"name":"BadRequest","data":{"message":"Expected QuestionAnswer, got \"SY215C\"\n  at [\"answers\"][0]","kind":"Payload"}}`},
		{"number label", "/question/" + id + "/reply", `{"answers":[[1]]}`, nil, 400,
			`{"name":"BadRequest","data":{"message":"Expected string, got 1\n  at [\"answers\"][0][0]","kind":"Payload"}}`},
		{"malformed json", "/question/" + id + "/reply", `{not json`, nil, 400, `{"name":"BadRequest","data":{"message":"Invalid JSON: …`},
		{"text/plain", "/question/" + id + "/reply", `{"answers":[]}`, []string{"Content-Type", "text/plain"}, 415, "Unsupported content-type: text/plain"},
		{"too few answers", "/question/" + id + "/reply", `{"answers":[["SY215C"]]}`, nil, 400, `{"name":"BadRequest","data":{"message":"answers…`},
		{"not an option", "/question/" + id + "/reply", `{"answers":[["not an option"],[]]}`, nil, 400, `{"name":"BadRequest","data":{"message":"answers[0] (\"Model\")…`},
		{"reject unknown", "/question/" + unknown + "/reject", ``, nil, 404, notFound},
		{"reject ignores broken body", "/question/" + unknown + "/reject", `{not json`, nil, 404, notFound},
		{"reject bad action", "/question/" + id + "/reject", `{"action":"maybe"}`, nil, 400,
			`{"name":"BadRequest","data":{"message":"Expected \"decline\" or \"cancel\", got \"maybe\"\n  at [\"action\"]","kind":"Payload"}}`},
		{"unknown route", "/nope", ``, nil, 404, `{"name":"NotFoundError","data":{"message":"No route for POST /nope"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := h.do(http.MethodPost, c.path, c.body, c.headers...)
			if res.Status != c.status {
				t.Fatalf("status %d (%s), want %d", res.Status, res.Body, c.status)
			}
			if prefix, ok := strings.CutSuffix(c.want, "…"); ok {
				if !strings.HasPrefix(string(res.Body), prefix) {
					t.Fatalf("body %s, want it to start with %s", res.Body, prefix)
				}
			} else if string(res.Body) != c.want {
				t.Fatalf("body %s\nwant %s", res.Body, c.want)
			}
		})
	}
	// None of the bad replies consumed the question.
	var listed []struct{ ID string }
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 1 || listed[0].ID != id {
		t.Fatalf("after bad replies GET /question = %v, want the question still pending", listed)
	}
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY215C"],[]]}`); res.Status != 200 {
		t.Fatalf("a good reply after bad ones: %d %s", res.Status, res.Body)
	}
	for _, route := range []string{"reply", "reject"} {
		res := h.do(http.MethodPost, "/question/"+id+"/"+route, `{"answers":[["SY215C"],[]]}`)
		if res.Status != 404 || !strings.Contains(string(res.Body), `"_tag":"QuestionNotFoundError"`) {
			t.Errorf("%s after reply: %d %s, want 404 QuestionNotFoundError", route, res.Status, res.Body)
		}
	}
}

func TestListKeepsCreationOrderAndDirectoryScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	withDir := func(dir string) map[string]any {
		f := seedForm()
		if dir != "" {
			f["directory"] = dir
		}
		return f
	}
	a := h.create(withDir("/home/alice/project")).ID
	b := h.create(withDir("/home/bob/other")).ID
	c := h.create(withDir("")).ID
	ids := func(path string, headers ...string) []string {
		var listed []struct{ ID string }
		h.do(http.MethodGet, path, nil, headers...).json(t, &listed)
		out := []string{}
		for _, q := range listed {
			out = append(out, q.ID)
		}
		return out
	}
	check := func(name string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("no directory", ids("/question"), a, b, c)
	check("alice by query", ids("/question?directory=%2Fhome%2Falice%2Fproject"), a, c)
	check("alice by header, trailing slash", ids("/question", "x-opencode-directory", "%2Fhome%2Falice%2Fproject%2F"), a, c)
	check("unknown directory", ids("/question?directory=/elsewhere"), c)

	// A reply from another directory's client cannot reach alice's question.
	res := h.do(http.MethodPost, "/question/"+a+"/reply?directory=/home/bob/other", `{"answers":[["SY215C"],[]]}`)
	if res.Status != http.StatusNotFound {
		t.Errorf("cross-directory reply: %d %s, want 404", res.Status, res.Body)
	}
}

// TestConcurrentEndingsSettleOnce races replies, rejects and withdrawals of
// one question: exactly one wins, every loser gets 404, and exactly one
// ending event is published.
func TestConcurrentEndingsSettleOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	for round := 0; round < 20; round++ {
		events := h.openStream("/event")
		events.expect(t, "server.connected")
		id := h.create(seedForm()).ID
		events.expect(t, "question.asked")
		var wg sync.WaitGroup
		statuses := make(chan int, 12)
		for i := 0; i < 4; i++ {
			wg.Add(3)
			go func() {
				defer wg.Done()
				res, _ := h.request(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY215C"],["Low power"]]}`)
				statuses <- res.Status
			}()
			go func() {
				defer wg.Done()
				res, _ := h.request(http.MethodPost, "/question/"+id+"/reject", nil)
				statuses <- res.Status
			}()
			go func() {
				defer wg.Done()
				res, _ := h.request(http.MethodDelete, "/elicitations/"+id, nil)
				statuses <- res.Status
			}()
		}
		wg.Wait()
		close(statuses)
		wins := 0
		for s := range statuses {
			switch s {
			case 200:
				wins++
			case 404:
			default:
				t.Fatalf("unexpected status %d", s)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d endings won, want exactly 1", round, wins)
		}
		ending := events.next(t)
		if ending.Type != "question.replied" && ending.Type != "question.rejected" {
			t.Fatalf("got %s after the race, want one ending event", ending.Type)
		}
		var props struct{ RequestID string }
		_ = json.Unmarshal(ending.Properties, &props)
		if props.RequestID != id {
			t.Fatalf("ending event for %s, want %s", props.RequestID, id)
		}
		// A stray second ending would arrive before the next question's event.
		next := h.create(seedForm()).ID
		var asked struct{ ID string }
		_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &asked)
		if asked.ID != next {
			t.Fatalf("got question.asked for %s, want %s", asked.ID, next)
		}
		h.do(http.MethodDelete, "/elicitations/"+next, nil)
		events.cancel()
	}
}
