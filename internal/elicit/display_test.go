package elicit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/elicit"
)

// An agent's text must read to the operator as it is. U+202E (RLO) makes
// "Deny \u202Eevorppa" display as "Deny approve"; every bidirectional
// embedding, override and isolate control is shown as U+FFFD, and the
// invisible marks are removed.
const (
	rlo = "\u202E"
	rli = "\u2067"
	pdi = "\u2069"
	rlm = "\u200F"
)

func TestBidiControlsAreNeutralisedInEveryShownText(t *testing.T) {
	schema := `{"type":"object","properties":{
		"verdict":{"type":"string","title":"Ver` + rlo + `dict","description":"Pick ` + rli + `one` + pdi + ` 10 ` + rlm + `20",
			"oneOf":[{"const":"deny","title":"Deny ` + rlo + `evorppa"},{"const":"approve","title":"Approve"}]},
		"legacy":{"type":"string","enum":["a","b"],"enumNames":["\u202Aleft","\u202Bright"]},
		"plain":{"type":"string","enum":["x` + rlo + `y","z"]},
		"many":{"type":"array","items":{"anyOf":[{"const":"1","title":"\u2066one\u2069"},{"const":"2","title":"\u202Dtwo\u202C"}]}}}}`
	form, err := elicit.NewForm("Ship it?"+rlo+"kcab llor", json.RawMessage(schema), elicit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []elicit.QuestionInfo{
		{Question: "Ship it?\uFFFDkcab llor\n\nPick \uFFFDone\uFFFD 10 20 (pick one)", Header: "Ver\uFFFDdict",
			Options: []elicit.QuestionOption{{Label: "Deny \uFFFDevorppa", Description: "deny"}, {Label: "Approve", Description: "approve"}}},
		{Question: "legacy (pick one)", Header: "legacy",
			Options: []elicit.QuestionOption{{Label: "\uFFFDleft", Description: "a"}, {Label: "\uFFFDright", Description: "b"}}},
		{Question: "plain (pick one)", Header: "plain",
			// The value is shown as its label; no description repeats it.
			Options: []elicit.QuestionOption{{Label: "x\uFFFDy", Description: ""}, {Label: "z", Description: ""}}},
		{Question: "many (pick any number)", Header: "many",
			Options: []elicit.QuestionOption{{Label: "\uFFFDone\uFFFD", Description: "1"}, {Label: "\uFFFDtwo\uFFFD", Description: "2"}}},
	}
	for i := range want {
		got := form.Questions[i]
		got.Multiple, got.Custom = nil, nil
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("question %d\n got %+v\nwant %+v", i, got, want[i])
		}
	}

	// The operator answers with the label as shown, or as the schema wrote
	// it; either reaches the option's value, untouched.
	for _, answers := range [][][]string{
		{{"Deny \uFFFDevorppa"}, {"\uFFFDright"}, {"x\uFFFDy"}, {"\uFFFDone\uFFFD", "\uFFFDtwo\uFFFD"}},
		{{"Deny " + rlo + "evorppa"}, {"\u202Bright"}, {"x" + rlo + "y"}, {"\u2066one\u2069", "\u202Dtwo\u202C"}},
	} {
		content, err := form.Convert(answers)
		if err != nil {
			t.Fatalf("answers %q: %v", answers, err)
		}
		want := elicit.Content{"verdict": "deny", "legacy": "b", "plain": "x" + rlo + "y", "many": []string{"1", "2"}}
		if !reflect.DeepEqual(content, want) {
			t.Errorf("answers %q: content %v, want %v", answers, content, want)
		}
	}
	// The lookalike without the override is still not the other option.
	if _, err := form.Convert([][]string{{"Deny approve"}, {}, {}, {}}); err == nil {
		t.Error(`"Deny approve" was accepted`)
	}
}

func TestLabelsThatLookTheSameAreDuplicates(t *testing.T) {
	_, err := elicit.ParseSchema(json.RawMessage(prop(`{"type":"string","oneOf":[{"const":"a","title":"x`+rlo+`y"},{"const":"b","title":"x\u202Dy"}]}`)), elicit.Options{})
	wantSchemaError(t, err, "requestedSchema.properties.p.oneOf[1].title",
		"duplicate option label \"x\ufffdy\" as operators see it (bidirectional controls and invisible characters are shown as U+FFFD, marks removed)")
	_, err = elicit.ParseSchema(json.RawMessage(prop(`{"type":"string","enum":["ab","a`+rlm+`b"]}`)), elicit.Options{})
	wantSchemaError(t, err, "requestedSchema.properties.p.enum[1]",
		`duplicate value "ab" as operators see it (bidirectional controls and invisible characters are shown as U+FFFD, marks removed)`)
}

func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                                                            "plain",
		"שלום עולם":                                                        "שלום עולם", // right-to-left letters stay
		"a\u202Ab\u202Bc\u202Cd\u202De\u202Ef":                             "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf",
		"a\u2066b\u2067c\u2068d\u2069e":                                    "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe",
		"a\u200Eb\u200Fc\u061Cd":                                           "abcd",
		"line\nnext\ttab\x1b[2J\x7f\u0085":                                 "line\nnext\ttab\uFFFD[2J\uFFFD\uFFFD",
		"zero\u200Bwidth\u2060joiner\uFEFF\u3164":                          "zero\uFFFDwidth\uFFFDjoiner\uFFFD\uFFFD",
		"family \U0001F468\u200D\U0001F469 \u2764\uFE0F":                   "family \U0001F468\u200D\U0001F469 \u2764\uFE0F",
		"\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645 and \u2028 stay": "\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645 and \u2028 stay",
		"flag \U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F ok": "flag \U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F ok",
		"smuggled \U000E0068\U000E0069 tags":                                             "smuggled \uFFFD\uFFFD tags",
	} {
		if got := elicit.Shown(in); got != want {
			t.Errorf("Shown(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFromPromptsNeutralisesBidiAndGivesTheLabelBack(t *testing.T) {
	prompts := []elicit.Prompt{{Question: "Merge " + rlo + "?", Header: "Mer" + rlo + "ge",
		Options: []elicit.PromptOption{{Label: "Keep " + rlo + "eteled", Description: "d" + rli + "x"}, {Label: "Delete"}}}}
	prompted, schema, questions, err := elicit.FromPrompts(prompts, elicit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	message := prompted.Message
	q := questions[0]
	if q.Question != "Merge \uFFFD?" || q.Header != "Mer\uFFFDge" ||
		q.Options[0] != (elicit.QuestionOption{Label: "Keep \uFFFDeteled", Description: "d\uFFFDx"}) {
		t.Fatalf("question %+v", q)
	}
	form, err := elicit.NewForm(message, schema, elicit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	content, err := form.Convert([][]string{{q.Options[0].Label}})
	if err != nil {
		t.Fatal(err)
	}
	if got := elicit.PromptAnswers(content, 1); !reflect.DeepEqual(got, [][]string{{"Keep " + rlo + "eteled"}}) {
		t.Fatalf("answers %q: the agent must get its own label back", got)
	}
	_, _, _, err = elicit.FromPrompts([]elicit.Prompt{{Question: "q", Options: []elicit.PromptOption{{Label: "a" + rlo + "b"}, {Label: "a\u202Db"}}}}, elicit.Options{})
	if err == nil || err.Error() != "questions[0].options[1].label: \"a\ufffdb\" as operators see it (bidirectional controls and invisible characters are shown as U+FFFD, marks removed) is already an option of this question" {
		t.Fatalf("look-alike labels: %v", err)
	}
}

func enumOf(n int) string {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("%q", fmt.Sprintf("v%d", i))
	}
	return "[" + strings.Join(values, ",") + "]"
}

func TestOptionLimit(t *testing.T) {
	shapes := map[string]func(n int) string{
		"enum": func(n int) string { return `{"type":"string","enum":` + enumOf(n) + `}` },
		"oneOf": func(n int) string {
			opts := make([]string, n)
			for i := range opts {
				opts[i] = fmt.Sprintf(`{"const":"v%d","title":"V%d"}`, i, i)
			}
			return `{"type":"string","oneOf":[` + strings.Join(opts, ",") + `]}`
		},
		"items.enum": func(n int) string { return `{"type":"array","items":{"type":"string","enum":` + enumOf(n) + `}}` },
	}
	for name, shape := range shapes {
		if _, err := elicit.ParseSchema(json.RawMessage(prop(shape(elicit.DefaultMaxOptions))), elicit.Options{}); err != nil {
			t.Errorf("%s with %d options: %v", name, elicit.DefaultMaxOptions, err)
		}
		_, err := elicit.ParseSchema(json.RawMessage(prop(shape(5000))), elicit.Options{})
		wantSchemaError(t, err, "requestedSchema.properties.p", "offers 5000 options; the limit is 1000")
		_, err = elicit.ParseSchema(json.RawMessage(prop(shape(4))), elicit.Options{MaxOptions: 3})
		wantSchemaError(t, err, "requestedSchema.properties.p", "offers 4 options; the limit is 3")
	}
	opts := make([]elicit.PromptOption, 4)
	for i := range opts {
		opts[i].Label = fmt.Sprint("o", i)
	}
	_, _, _, err := elicit.FromPrompts([]elicit.Prompt{{Question: "q"}, {Question: "r", Options: opts}}, elicit.Options{MaxOptions: 3})
	if err == nil || err.Error() != "questions[1].options: at most 3 options can be offered, got 4" {
		t.Fatalf("prompt with too many options: %v", err)
	}
}

// Options and property keys that an operator cannot tell apart — equal once
// invisible characters are gone and compatibility forms composed (NFKC) —
// are refused, naming the field.
func TestLookalikeOptionsAndKeysAreRefused(t *testing.T) {
	for _, c := range []struct{ schema, at, want string }{
		{prop(`{"type":"string","enum":["ab","a\u200bb"]}`), "requestedSchema.properties.p.enum[1]", `duplicate value "a\u200bb": operators cannot tell it from "ab"`},
		{prop(`{"type":"string","enum":["fi","\ufb01"]}`), "requestedSchema.properties.p.enum[1]", `operators cannot tell it from "fi"`},
		{prop(`{"type":"string","enum":["ab","a\u200db"]}`), "requestedSchema.properties.p.enum[1]", `operators cannot tell it from "ab"`},
		{prop(`{"type":"string","oneOf":[{"const":"y","title":"Approve"},{"const":"n","title":"\uff21pprove"}]}`), "requestedSchema.properties.p.oneOf[1].title", `operators cannot tell it from "Approve"`},
		{prop(`{"type":"array","items":{"type":"string","enum":["K","\u212a"]}}`), "requestedSchema.properties.p.items.enum[1]", `operators cannot tell it from "K"`},
		{`{"type":"object","properties":{"name":{"type":"string"},"name\u200d":{"type":"string"}}}`, `requestedSchema.properties["name\u200d"]`, `duplicate property key "name\u200d": operators cannot tell it from "name"`},
	} {
		_, err := elicit.ParseSchema(json.RawMessage(c.schema), elicit.Options{})
		var se *elicit.SchemaError
		if !errors.As(err, &se) || se.Path != c.at || !strings.Contains(se.Rule, c.want) {
			t.Errorf("%s: %v, want a SchemaError at %s saying %s", c.schema, err, c.at, c.want)
		}
	}
	// Different text that merely looks alike in some fonts stays allowed.
	for _, schema := range []string{
		prop(`{"type":"string","enum":["a","A","\u00e4","a\u0308b","ab"]}`),
		prop(`{"type":"string","enum":["l","1","I"]}`),
	} {
		if _, err := elicit.ParseSchema(json.RawMessage(schema), elicit.Options{}); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
	_, _, _, err := elicit.FromPrompts([]elicit.Prompt{{Question: "q", Options: []elicit.PromptOption{{Label: "K"}, {Label: "\u212a"}}}}, elicit.Options{})
	var pe *elicit.PromptError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "questions[0].options[1].label") {
		t.Errorf("prompts K and Kelvin sign: %v, want a PromptError naming the second label", err)
	}
}
