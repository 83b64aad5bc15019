package httpapi_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/testserver"
)

// everyShapeBody asks one question of every kind the page renders.
const everyShapeBody = `{"sessionID":"ses_form","directory":"/srv/app","message":"Release <b>v2</b>?","requestedSchema":{
	"type":"object",
	"properties":{
		"env":{"type":"string","title":"Environment","description":"Where to deploy","oneOf":[
			{"const":"stg","title":"Staging"},{"const":"prod","title":"Production"}],"default":"stg"},
		"checks":{"type":"array","title":"Checks","minItems":1,"maxItems":2,
			"items":{"type":"string","enum":["lint","test","bench"]},"default":["test"]},
		"notify":{"type":"boolean","title":"Notify","default":false},
		"contact":{"type":"string","title":"Contact","format":"email","minLength":3,"maxLength":60,"pattern":"@example\\.com$",
			"examples":["ops@example.com",{"not":"text"},"dev@example.com\nsecond line","x@example.com","y@example.com"]},
		"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":9,"default":2},
		"ratio":{"type":"number","title":"Ratio","minimum":0,"maximum":1}
	},
	"required":["env","contact"]}}`

// TestQuestionFormDescribesEveryShape reads the form of a question with every
// kind of property: kinds, options, bounds, formats, defaults and required
// marks in schema order, the message as sent; a pattern's examples (a few
// texts, one line each) for the page to show instead of the pattern.
func TestQuestionFormDescribesEveryShape(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	c := h.create(json.RawMessage(everyShapeBody))
	res := h.do(http.MethodGet, "/questiond/question/"+c.ID+"/form", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET form: %d %s", res.Status, res.Body)
	}
	var got map[string]any
	res.json(t, &got)
	want := map[string]any{}
	if err := json.Unmarshal([]byte(`{
		"id":"`+c.ID+`","sessionID":"ses_form","directory":"/srv/app","message":"Release <b>v2</b>?",
		"fields":[
		 {"key":"env","kind":"single","header":"Environment","title":"Environment","description":"Where to deploy","required":true,
		  "default":"stg","options":[{"value":"stg","label":"Staging","description":"stg (default)"},
		   {"value":"prod","label":"Production","description":"prod"}]},
		 {"key":"checks","kind":"multi","header":"Checks","title":"Checks","required":false,"default":["test"],
		  "minItems":1,"maxItems":2,"options":[{"value":"lint","label":"lint","description":""},
		   {"value":"test","label":"test","description":"(default)"},{"value":"bench","label":"bench","description":""}]},
		 {"key":"notify","kind":"boolean","header":"Notify","title":"Notify","required":false,"default":false,
		  "options":[{"value":"true","label":"Yes","description":""},{"value":"false","label":"No","description":"(default)"}]},
		 {"key":"contact","kind":"text","header":"Contact","title":"Contact","required":true,"format":"email",
		  "minLength":3,"maxLength":60,"pattern":"@example\\.com$",
		  "examples":["ops@example.com","dev@example.com","x@example.com"]},
		 {"key":"replicas","kind":"integer","header":"Replicas","title":"Replicas","required":false,"default":2,"minimum":1,"maximum":9},
		 {"key":"ratio","kind":"number","header":"Ratio","title":"Ratio","required":false,"minimum":0,"maximum":1}
		]}`), &want); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"createdAt", "deadline"} { // the default timeout's
		if got[key] == nil {
			t.Errorf("no %s", key)
		}
		delete(got, key)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		t.Errorf("form:\n%s", g)
	}

	// Scoped and refused like the other question routes.
	for path, status := range map[string]int{
		"/questiond/question/" + c.ID + "/form?directory=/elsewhere": http.StatusNotFound,
		"/questiond/question/" + c.ID + "/form?directory=/srv/app/":  http.StatusOK,
		"/questiond/question/que_00000000000000000000000000/form":    http.StatusNotFound,
		"/questiond/question/abc/form":                               http.StatusBadRequest,
		"/questiond/question/" + c.ID + "/form?directory=%01":        http.StatusBadRequest,
	} {
		if res := h.do(http.MethodGet, path, nil); res.Status != status {
			t.Errorf("GET %s: %d %s, want %d", path, res.Status, res.Body, status)
		}
	}
	// Answered: the form is gone with the question.
	if res := h.do(http.MethodPost, "/question/"+c.ID+"/reject", nil); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	if res := h.do(http.MethodGet, "/questiond/question/"+c.ID+"/form", nil); res.Status != http.StatusNotFound {
		t.Errorf("GET form of an ended question: %d %s, want 404", res.Status, res.Body)
	}
}

// TestQuestionFormAfterRestart reads the form of a question the durable
// store loaded from disk, where the parsed form is not kept: it is rebuilt
// from the stored message and schema, the same as before.
func TestQuestionFormAfterRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "questiond.db")
	start := func() *testserver.Server {
		srv, err := testserver.Start(testserver.Config{BoltPath: path, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	get := func(url string) []byte {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body json.RawMessage
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
		}
		return body
	}
	srv := start()
	res, err := http.Post(srv.URL+"/elicitations", "application/json", bytesReader([]byte(everyShapeBody)))
	if err != nil {
		t.Fatal(err)
	}
	var c created
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	before := get(srv.URL + "/questiond/question/" + c.ID + "/form")
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	srv = start()
	t.Cleanup(func() { _ = srv.Stop() })
	if after := get(srv.URL + "/questiond/question/" + c.ID + "/form"); string(after) != string(before) {
		t.Errorf("after a restart the form is\n%s\nbefore it was\n%s", after, before)
	}
}

// TestQuestionFormKeepsTheToolsOptionDescriptions: a question asked through
// the MCP question tool has option descriptions its schema cannot carry;
// the form shows each option's description as GET /question (and so the
// TUI) does, and its header.
func TestQuestionFormKeepsTheToolsOptionDescriptions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	cs := mcpConnect(t, h, "/mcp?session=ses_tool", nil, nil)
	call := callAsync(t.Context(), cs, "ask_user_question", map[string]any{"questions": []any{
		map[string]any{"question": "Which database?", "header": "Database", "options": []any{
			map[string]any{"label": "Postgres", "description": "Relational, robust"},
			map[string]any{"label": "SQLite", "description": "Embedded, simple"},
		}},
		map[string]any{"question": "Which features?", "header": "Features", "multiple": true, "options": []any{
			map[string]any{"label": "Auth", "description": "Login"},
			map[string]any{"label": "Billing"},
		}},
		map[string]any{"question": "Anything else?", "header": "Notes"},
	}})
	listed := waitListed(t, h)
	id, _ := listed["id"].(string)
	res := h.do(http.MethodGet, "/questiond/question/"+id+"/form", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET form: %d %s", res.Status, res.Body)
	}
	var form struct {
		Fields []struct {
			Header  string
			Options []struct{ Label, Description string }
		}
	}
	res.json(t, &form)
	var want struct {
		Questions []struct {
			Header  string
			Options []struct{ Label, Description string }
		}
	}
	raw, _ := json.Marshal(listed)
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(form.Fields) != len(want.Questions) {
		t.Fatalf("%d fields for %d questions: %s", len(form.Fields), len(want.Questions), res.Body)
	}
	for i, q := range want.Questions {
		f := form.Fields[i]
		if f.Header != q.Header || (len(q.Options) > 0 && !reflect.DeepEqual(f.Options, q.Options)) {
			t.Errorf("fields[%d]: %q %+v, want as GET /question shows it: %q %+v", i, f.Header, f.Options, q.Header, q.Options)
		}
	}
	if got := form.Fields[0].Options[0].Description; got != "Relational, robust" {
		t.Errorf("the first option's description is %q", got)
	}
	if res := h.do(http.MethodPost, "/question/"+id+"/reject", nil); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	ended(t, call)
}
