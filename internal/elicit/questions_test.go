package elicit_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/elicit"
)

// The whole §2.3 fixture as OpenCode receives it. Field order, "options": []
// for free text and the omitted "custom" (= typing allowed) are the wire
// contract.
func TestNewFormCombinedFixtureWire(t *testing.T) {
	form, err := elicit.NewForm("Set up the deployment", json.RawMessage(combinedSchema), elicit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(form.Questions)
	if err != nil {
		t.Fatal(err)
	}
	want := `[` +
		`{"question":"Set up the deployment\n\nName (text; 1–40 characters) (required)","header":"Name","options":[]},` +
		`{"question":"Contact email (email address)","header":"Contact email","options":[]},` +
		`{"question":"Start date (date YYYY-MM-DD)","header":"Start date","options":[]},` +
		`{"question":"Replicas (integer between 1 and 10; default: 2)","header":"Replicas","options":[]},` +
		`{"question":"Canary ratio (number between 0 and 1)","header":"Canary ratio","options":[]},` +
		`{"question":"Dry run (Yes or No; default: Yes)","header":"Dry run","options":[{"label":"Yes","description":"(default)"},{"label":"No","description":""}],"custom":false},` +
		`{"question":"Environment (pick one; default: dev) (required)","header":"Environment","options":[{"label":"dev","description":"(default)"},{"label":"staging","description":""},{"label":"prod","description":""}],"custom":false},` +
		`{"question":"Region (pick one)","header":"Region","options":[{"label":"Ireland","description":"eu-west-1"},{"label":"Virginia","description":"us-east-1"}],"custom":false},` +
		`{"question":"tier (pick one)","header":"tier","options":[{"label":"Small","description":"s"},{"label":"Medium","description":"m"}],"custom":false},` +
		`{"question":"Tags (pick at most 2)","header":"Tags","options":[{"label":"web","description":""},{"label":"db","description":""},{"label":"cache","description":""}],"multiple":true,"custom":false},` +
		`{"question":"Owners (pick at least 1) (required)","header":"Owners","options":[{"label":"Ada","description":"u1"},{"label":"Linus","description":"u2"}],"multiple":true,"custom":false}` +
		`]`
	if string(got) != want {
		t.Fatalf("questions\n got %s\nwant %s", got, want)
	}
	if form.Message != "Set up the deployment" || len(form.Schema.Properties) != len(form.Questions) {
		t.Fatalf("form %+v", form)
	}
}

func TestNewFormOneQuestionPerPropertyInOrder(t *testing.T) {
	form := mustForm(t, seedRFCSchema)
	if len(form.Questions) != 2 || form.Schema.Properties[0].Key != "q0" || form.Schema.Properties[1].Key != "q1" {
		t.Fatalf("got %+v", form.Schema.Properties)
	}
	if form.Questions[0].Header != "Model" || form.Questions[1].Header != "Symptoms" {
		t.Fatalf("headers %q, %q", form.Questions[0].Header, form.Questions[1].Header)
	}
	if got := form.Questions[1].Options; len(got) != 2 || got[0].Label != "Black smoke" || got[1].Label != "Low power" {
		t.Fatalf("options %+v", got)
	}
}

func TestQuestionTextFallsBack(t *testing.T) {
	form := mustForm(t, `{"type":"object","properties":{
		"both":{"type":"boolean","title":"Title","description":"Description"},
		"title":{"type":"boolean","title":"Title only"},
		"key":{"type":"boolean"},
		"blank":{"type":"boolean","title":"  ","description":"\n"}}}`)
	want := []string{
		"Please answer\n\nDescription (Yes or No)",
		"Title only (Yes or No)",
		"key (Yes or No)",
		"blank (Yes or No)",
	}
	for i, q := range form.Questions {
		if q.Question != want[i] {
			t.Errorf("question %d = %q, want %q", i, q.Question, want[i])
		}
	}
	if form.Questions[0].Header != "Title" || form.Questions[3].Header != "blank" {
		t.Errorf("headers %q, %q", form.Questions[0].Header, form.Questions[3].Header)
	}
}

func TestNewFormBlankMessageIsNotPrefixed(t *testing.T) {
	for _, msg := range []string{"", " \n\t"} {
		form, err := elicit.NewForm(msg, json.RawMessage(namedKeysSchema), elicit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := form.Questions[0].Question; got != "Equipment model? (pick one) (required)" {
			t.Fatalf("message %q gave question %q", msg, got)
		}
	}
}

func TestHeaderIsCutByRunes(t *testing.T) {
	tests := []struct {
		title string
		limit int
		want  string
	}{
		{"Short", 0, "Short"},
		{strings.Repeat("a", 30), 0, strings.Repeat("a", 30)},
		{strings.Repeat("a", 31), 0, strings.Repeat("a", 29) + "…"},
		{strings.Repeat("日本語", 11), 0, strings.Repeat("日本語", 9) + "日本…"},
		{"Deployment environment", 12, "Deployment …"},
		{"🙂🙂🙂🙂", 3, "🙂🙂…"},
		{"  Two\n lines\tof   title ", 0, "Two lines of title"},
		{"abc", 1, "…"},
	}
	for _, tc := range tests {
		schema := `{"type":"object","properties":{"p":{"type":"string","title":` + jsonString(tc.title) + `}}}`
		form, err := elicit.NewForm("", json.RawMessage(schema), elicit.Options{HeaderLimit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		got := form.Questions[0].Header
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("title %q limit %d: header %q, want %q", tc.title, tc.limit, got, tc.want)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestQuestionHints(t *testing.T) {
	tests := []struct{ property, want string }{
		{`{"type":"string"}`, "p (text) (required)"},
		{`{"type":"string","minLength":0}`, "p (text) (required)"},
		{`{"type":"string","minLength":2}`, "p (text; at least 2 characters) (required)"},
		{`{"type":"string","maxLength":1}`, "p (text; at most 1 character) (required)"},
		{`{"type":"string","minLength":0,"maxLength":9}`, "p (text; at most 9 characters) (required)"},
		{`{"type":"string","minLength":5,"maxLength":5}`, "p (text; exactly 5 characters) (required)"},
		{`{"type":"string","format":"email","default":"a@b.c"}`, `p (email address; default: "a@b.c") (required)`},
		{`{"type":"string","format":"uri"}`, "p (absolute URI, e.g. https://example.com) (required)"},
		{`{"type":"string","format":"date"}`, "p (date YYYY-MM-DD) (required)"},
		{`{"type":"string","format":"date-time"}`, "p (date-time, RFC 3339, e.g. 2026-01-31T09:30:00Z) (required)"},
		{`{"type":"string","pattern":"^x"}`, "p (text; matching the pattern `^x`) (required)"},
		{`{"type":"number"}`, "p (number) (required)"},
		{`{"type":"number","minimum":0.5}`, "p (number, at least 0.5) (required)"},
		{`{"type":"number","maximum":1e30}`, "p (number, at most 1e+30) (required)"},
		{`{"type":"integer","minimum":0.5,"maximum":9.9,"default":3}`, "p (integer between 1 and 9; default: 3) (required)"},
		{`{"type":"boolean","default":false}`, "p (Yes or No; default: No) (required)"},
		{`{"type":"string","oneOf":[{"const":"a","title":"Alpha"}],"default":"a"}`, "p (pick one; default: Alpha) (required)"},
		{`{"type":"array","items":{"type":"string","enum":["a","b"]}}`, "p (pick any number) (required)"},
		{`{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b"]},"default":["b","a"]}`, "p (pick 1–2; default: a, b) (required)"},
		{`{"type":"array","items":{"type":"string","enum":["a"]},"default":[]}`, "p (pick any number; default: none) (required)"},
	}
	for _, tc := range tests {
		form, err := elicit.NewForm("", json.RawMessage(`{"type":"object","properties":{"p":`+tc.property+`},"required":["p"]}`), elicit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := form.Questions[0].Question; got != tc.want {
			t.Errorf("%s\n got %q\nwant %q", tc.property, got, tc.want)
		}
	}
}

func TestQuestionFlags(t *testing.T) {
	form := mustForm(t, combinedSchema)
	for i, p := range form.Schema.Properties {
		q := form.Questions[i]
		if q.Options == nil {
			t.Errorf("%s: nil options", p.Key)
		}
		free := p.Kind == elicit.KindString || p.Kind == elicit.KindNumber || p.Kind == elicit.KindInteger
		if free != (q.Custom == nil) || !free && *q.Custom {
			t.Errorf("%s (%s): custom %v", p.Key, p.Kind, q.Custom)
		}
		if (p.Kind == elicit.KindMultiSelect) != (q.Multiple != nil && *q.Multiple) {
			t.Errorf("%s (%s): multiple %v", p.Key, p.Kind, q.Multiple)
		}
		if free && len(q.Options) != 0 {
			t.Errorf("%s: free-text question with options", p.Key)
		}
	}
}

func TestNewFormIsDeterministic(t *testing.T) {
	a := mustForm(t, combinedSchema)
	b := mustForm(t, combinedSchema)
	if !reflect.DeepEqual(a.Questions, b.Questions) {
		t.Fatal("the same schema gave different questions")
	}
	// Questions do not share flag pointers: a caller editing one cannot
	// change another.
	*a.Questions[5].Custom = true
	if *a.Questions[6].Custom || *b.Questions[5].Custom {
		t.Fatal("questions share flag pointers")
	}
}

func TestControlCharactersAreShownNotObeyed(t *testing.T) {
	schema := `{"type":"object","properties":{"p":{"type":"string","title":"Bad\u001b[2Jtitle",
		"oneOf":[{"const":"v\u0007","title":"Label"}]}}}`
	form, err := elicit.NewForm("Line one\nline two\u001b]0;pwned\u0007", json.RawMessage(schema), elicit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := form.Questions[0]
	if q.Header != "Bad\uFFFD[2Jtitle" {
		t.Errorf("header %q", q.Header)
	}
	if q.Question != "Line one\nline two\uFFFD]0;pwned\uFFFD\n\nBad\uFFFD[2Jtitle (pick one)" {
		t.Errorf("question %q", q.Question)
	}
	if q.Options[0].Description != "v\uFFFD" {
		t.Errorf("option description %q", q.Options[0].Description)
	}
	// The value itself is returned untouched.
	content, err := form.Convert([][]string{{"Label"}})
	if err != nil || content["p"] != "v\u0007" {
		t.Fatalf("got %v, %v", content, err)
	}
}
