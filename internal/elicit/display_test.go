package elicit_test

import (
	"encoding/json"
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
		"duplicate option label \"x\ufffdy\" as operators see it (bidirectional controls are shown as U+FFFD, marks removed)")
	_, err = elicit.ParseSchema(json.RawMessage(prop(`{"type":"string","enum":["ab","a`+rlm+`b"]}`)), elicit.Options{})
	wantSchemaError(t, err, "requestedSchema.properties.p.enum[1]",
		`duplicate option label "ab" as operators see it (bidirectional controls are shown as U+FFFD, marks removed)`)
}

func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                                       "plain",
		"שלום עולם":                                   "שלום עולם", // right-to-left letters stay
		"a\u202Ab\u202Bc\u202Cd\u202De\u202Ef":        "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe\uFFFDf",
		"a\u2066b\u2067c\u2068d\u2069e":               "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe",
		"a\u200Eb\u200Fc\u061Cd":                      "abcd",
		"line\nnext\ttab\x1b[2J\x7f\u0085":            "line\nnext\ttab\uFFFD[2J\uFFFD\uFFFD",
		"zero\u200Bwidth\u200Djoiner and \u2028 stay": "zero\u200Bwidth\u200Djoiner and \u2028 stay",
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
	if err == nil || err.Error() != "questions[0].options[1].label: \"a\ufffdb\" is already an option of this question, as operators see it (bidirectional controls are shown as U+FFFD, marks removed)" {
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
