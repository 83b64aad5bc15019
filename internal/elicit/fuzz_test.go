package elicit_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/elicit"
)

// The fuzz targets check the package's promises on arbitrary input: no
// panic; every failure is the documented error type; an accepted schema is
// one the MCP Go SDK's validator can load; accepted content has only
// declared keys, the documented Go types, and passes the SDK's validation.
// Seeds live in testdata/fuzz/<Target>/ as well as in the f.Add calls.

func fuzzSchemas() []string {
	return []string{combinedSchema, seedRFCSchema, namedKeysSchema, enumsSchema, defaultsSchema, oneOfMultiSchema, tenPropertySchema}
}

func FuzzParseSchema(f *testing.F) {
	for _, s := range fuzzSchemas() {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"object","properties":{}}}}`))
	f.Add([]byte(`{"type":"object","properties":{"p":{"type":"string","pattern":"^[a-z]{2,}$","default":"ab"}}}`))
	f.Add([]byte(`{"type":"object","properties":{"p":{"type":"integer","minimum":-9007199254740992,"default":-0}}}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(`{"type":"object","properties":{"p":{"type":"string"}}} []`))
	f.Add([]byte(bidiSchema))
	f.Fuzz(func(t *testing.T, raw []byte) {
		schema, err := elicit.ParseSchema(raw, elicit.Options{})
		if err != nil {
			var se *elicit.SchemaError
			if !errors.As(err, &se) || !strings.HasPrefix(se.Path, "requestedSchema") || se.Rule == "" {
				t.Fatalf("error %v (%T) is not a proper *SchemaError", err, err)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
		if _, err := sdkSchema(raw); err != nil {
			t.Fatalf("accepted a schema the SDK cannot decode: %v", err)
		}
		form, err := elicit.NewForm("m", raw, elicit.Options{})
		if err != nil {
			t.Fatalf("ParseSchema accepted but NewForm failed: %v", err)
		}
		if !reflect.DeepEqual(form.Schema.Properties, schema.Properties) {
			t.Fatal("NewForm and ParseSchema disagree")
		}
		checkQuestions(t, form)
		// Answering nothing yields the defaults, or says what is required.
		content, err := form.Convert(make([][]string, len(form.Questions)))
		if err != nil {
			var ae *elicit.AnswerError
			if !errors.As(err, &ae) || ae.Problem != "an answer is required" {
				t.Fatalf("empty answers: %v", err)
			}
			return
		}
		checkFuzzContent(t, form, raw, content)
	})
}

func checkQuestions(t *testing.T, form *elicit.Form) {
	t.Helper()
	if len(form.Questions) != len(form.Schema.Properties) || len(form.Questions) == 0 {
		t.Fatalf("%d questions for %d properties", len(form.Questions), len(form.Schema.Properties))
	}
	for i, q := range form.Questions {
		p := form.Schema.Properties[i]
		if q.Options == nil || q.Header == "" || q.Question == "" {
			t.Fatalf("question %d incomplete: %+v", i, q)
		}
		if n := utf8.RuneCountInString(q.Header); n > elicit.DefaultHeaderLimit || !utf8.ValidString(q.Header) {
			t.Fatalf("header %q: %d runes", q.Header, n)
		}
		if (p.Kind == elicit.KindSingleEnum || p.Kind == elicit.KindMultiSelect) && len(q.Options) != len(p.Choices) {
			t.Fatalf("%d options for %d choices", len(q.Options), len(p.Choices))
		}
		for _, text := range append([]string{q.Header, q.Question}, optionTexts(q)...) {
			if strings.ContainsFunc(text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' || isBidiFormatting(r) }) {
				t.Fatalf("question %d shows control characters: %q", i, text)
			}
		}
		seen := map[string]bool{}
		for _, o := range q.Options {
			if seen[o.Label] || strings.TrimSpace(o.Label) == "" {
				t.Fatalf("question %d: blank or repeated label %q", i, o.Label)
			}
			seen[o.Label] = true
		}
	}
}

func optionTexts(q elicit.QuestionInfo) []string {
	var texts []string
	for _, o := range q.Options {
		texts = append(texts, o.Label, o.Description)
	}
	return texts
}

// fuzzAnswers decodes the fuzzer's answer string: questions separated by
// \x1e, entries by \x1f; an entry "#n" stands for the label of option n,
// so the fuzzer reaches valid picks easily. The list is padded or cut to
// the number of questions (the count check has its own unit test).
func fuzzAnswers(form *elicit.Form, encoded string) [][]string {
	answers := make([][]string, len(form.Questions))
	for i, part := range strings.Split(encoded, "\x1e") {
		if i >= len(answers) {
			break
		}
		answers[i] = []string{}
		if part == "" {
			continue
		}
		for _, entry := range strings.Split(part, "\x1f") {
			if n, err := strconv.Atoi(strings.TrimPrefix(entry, "#")); err == nil && strings.HasPrefix(entry, "#") && n >= 0 && len(form.Questions[i].Options) > 0 {
				entry = form.Questions[i].Options[n%len(form.Questions[i].Options)].Label
			}
			answers[i] = append(answers[i], entry)
		}
	}
	return answers
}

func FuzzConvert(f *testing.F) {
	f.Add([]byte(seedRFCSchema), "SY215C\x1eBlack smoke")
	f.Add([]byte(namedKeysSchema), "#1\x1e#0\x1f#1")
	f.Add([]byte(combinedSchema), "api\x1e\x1e\x1e\x1e\x1eYes\x1eprod\x1eIreland\x1e\x1eweb\x1eAda")
	f.Add([]byte(combinedSchema), " x \x1ea@b.co\x1e2024-02-29\x1e1e1\x1e-0\x1efalse\x1e#2\x1e#1\x1eSmall\x1e#0\x1f#2\x1f#0\x1e#1")
	f.Add([]byte(enumsSchema), "option1\x1eFirst Option\x1eOption One\x1eoption1\x1foption2\x1eFirst Choice\x1fSecond Choice")
	f.Add([]byte(defaultsSchema), "\x1e\x1e\x1e\x1e")
	f.Add([]byte(oneOfMultiSchema), "#0\x1f#2")
	f.Add([]byte(bidiSchema), "Deny \u202Eevorppa\x1e#1\x1fx\u200Fy")
	f.Add([]byte(tenPropertySchema), "api\x1eops@example.com\x1e2026-03-01\x1e3\x1e0.25\x1eNo\x1eprod\x1eIreland\x1eweb\x1fdb\x1eAda")
	f.Fuzz(func(t *testing.T, raw []byte, encoded string) {
		form, err := elicit.NewForm("m", raw, elicit.Options{})
		if err != nil {
			return
		}
		answers := fuzzAnswers(form, encoded)
		content, err := form.Convert(answers)
		if err != nil {
			var ae *elicit.AnswerError
			if !errors.As(err, &ae) || ae.Index < 0 || ae.Index >= len(form.Questions) || ae.Problem == "" ||
				ae.Header != form.Questions[ae.Index].Header {
				t.Fatalf("error %v (%T) is not a proper *AnswerError", err, err)
			}
			return
		}
		checkFuzzContent(t, form, raw, content)
	})
}

// checkFuzzContent asserts the content promises: declared keys only, the
// documented Go type per kind, and the SDK's validation.
func checkFuzzContent(t *testing.T, form *elicit.Form, raw []byte, content elicit.Content) {
	t.Helper()
	if key, ok := undeclaredKey(form, content); ok {
		t.Fatalf("content has undeclared key %q", key)
	}
	for _, p := range form.Schema.Properties {
		v, ok := content[p.Key]
		if !ok {
			if p.Required {
				t.Fatalf("required %q missing from %v", p.Key, content)
			}
			continue
		}
		var typeOK bool
		switch p.Kind {
		case elicit.KindString, elicit.KindSingleEnum:
			_, typeOK = v.(string)
		case elicit.KindNumber:
			_, typeOK = v.(float64)
		case elicit.KindInteger:
			_, typeOK = v.(int64)
		case elicit.KindBoolean:
			_, typeOK = v.(bool)
		case elicit.KindMultiSelect:
			_, typeOK = v.([]string)
		}
		if !typeOK {
			t.Fatalf("%s (%s) has value %#v", p.Key, p.Kind, v)
		}
	}
	if err := validateLikeSDK(raw, content); err != nil {
		t.Fatalf("content fails the SDK's validation: %v", err)
	}
}

// bidiSchema hides bidirectional controls and marks in every place that is
// shown: title, description, oneOf titles, enum values and items titles.
const bidiSchema = `{"type":"object","properties":{
	"v":{"type":"string","title":"T\u202Ei\u2066t","description":"1 \u200F2 \u061C3",
		"oneOf":[{"const":"deny","title":"Deny \u202Eevorppa"},{"const":"ok","title":"Approve"}]},
	"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"\u2067A\u2069"},{"const":"b","title":"x\u200Fy"}]}}},
	"required":["v"]}`

// isBidiFormatting reports the bidirectional controls and marks that
// elicit.Shown keeps from operators.
func isBidiFormatting(r rune) bool {
	return r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069' || r == '\u200E' || r == '\u200F' || r == '\u061C'
}
