package elicit_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/elicit"
)

// FromPrompts and PromptAnswers: the question tools' input becomes an
// elicitation that NewForm accepts, and the operator's answers come back as
// the labels and text the prompts offered.

func opt(label, description string) elicit.QuestionOption {
	return elicit.QuestionOption{Label: label, Description: description}
}

func po(label, description string) elicit.PromptOption {
	return elicit.PromptOption{Label: label, Description: description}
}

func fromPrompts(t *testing.T, prompts []elicit.Prompt, opts elicit.Options) (string, json.RawMessage, []elicit.QuestionInfo, *elicit.Form) {
	t.Helper()
	prompted, schema, shown, err := elicit.FromPrompts(prompts, opts)
	if err != nil {
		t.Fatalf("FromPrompts: %v", err)
	}
	form, err := elicit.NewForm(prompted.Message, schema, opts)
	if err != nil {
		t.Fatalf("NewForm refuses the schema FromPrompts made: %v\n%s", err, schema)
	}
	// A stored question is rebuilt with NewForm (after a restart, say): it
	// must be the very form the tool asked with.
	if !reflect.DeepEqual(prompted, form) {
		t.Fatalf("FromPrompts' form differs from NewForm's of its message and schema:\n%+v\n%+v", prompted, form)
	}
	return prompted.Message, schema, shown, form
}

func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestFromPromptsMakesASchemaNewFormAccepts(t *testing.T) {
	prompts := []elicit.Prompt{
		{Question: " Which database? ", Header: "Database", Options: []elicit.PromptOption{po("Postgres", "Relational"), po("SQLite", "")}},
		{Question: "Which features?", Header: "Features", Multiple: true, Options: []elicit.PromptOption{po("Auth", "Login"), po("Billing", "Payments")}},
		{Question: "Anything else?", Header: "Notes"},
	}
	message, schema, shown, form := fromPrompts(t, prompts, elicit.Options{})
	if message != "3 questions: Which database?" {
		t.Errorf("message %q", message)
	}
	sameJSON(t, schema, `{"type":"object","properties":{
		"q1":{"type":"string","title":"Database","description":"Which database?",
			"oneOf":[{"const":"Postgres","title":"Postgres"},{"const":"SQLite","title":"SQLite"}]},
		"q2":{"type":"array","title":"Features","description":"Which features?",
			"items":{"anyOf":[{"const":"Auth","title":"Auth"},{"const":"Billing","title":"Billing"}]}},
		"q3":{"type":"string","title":"Notes","description":"Anything else?"}}}`)
	if _, err := sdkSchema(schema); err != nil {
		t.Errorf("the MCP SDK cannot load the schema: %v", err)
	}
	kinds := []elicit.Kind{elicit.KindSingleEnum, elicit.KindMultiSelect, elicit.KindString}
	for i, p := range form.Schema.Properties {
		if p.Key != elicit.PromptKey(i) || p.Kind != kinds[i] || p.Required {
			t.Errorf("property %d: key %q kind %q required %v, want %q %q optional", i, p.Key, p.Kind, p.Required, elicit.PromptKey(i), kinds[i])
		}
	}
	f := false
	tr := true
	want := []elicit.QuestionInfo{
		{Question: "Which database?", Header: "Database", Options: []elicit.QuestionOption{opt("Postgres", "Relational"), opt("SQLite", "")}, Custom: &f},
		{Question: "Which features?", Header: "Features", Options: []elicit.QuestionOption{opt("Auth", "Login"), opt("Billing", "Payments")}, Multiple: &tr, Custom: &f},
		{Question: "Anything else?", Header: "Notes", Options: []elicit.QuestionOption{}},
	}
	if !reflect.DeepEqual(shown, want) {
		got, _ := json.Marshal(shown)
		exp, _ := json.Marshal(want)
		t.Errorf("shown questions\n got %s\nwant %s", got, exp)
	}
	// The questions the form itself would show differ (message, hints):
	// callers show the prompts as written, so the lengths must agree.
	if len(form.Questions) != len(shown) {
		t.Errorf("%d shown questions for %d form questions", len(shown), len(form.Questions))
	}

	one, _, _, _ := fromPrompts(t, prompts[2:], elicit.Options{})
	if one != "Anything else?" {
		t.Errorf("message of one prompt %q, want the question", one)
	}
}

func TestFromPromptsAnswersRoundTrip(t *testing.T) {
	prompts := []elicit.Prompt{
		{Question: "Size?", Options: []elicit.PromptOption{po("  Small  ", ""), po("small", ""), po("Größe ✓", ""), po("K", ""), po("\u212a\u00b0", "Kelvin")}},
		{Question: "Toppings?", Multiple: true, Options: []elicit.PromptOption{po("Cheese", ""), po("Ham", ""), po("Olives", "")}},
		{Question: "Note?"},
		{Question: "Skipped?", Options: []elicit.PromptOption{po("Yes", ""), po("No", "")}},
	}
	_, schema, shown, form := fromPrompts(t, prompts, elicit.Options{})
	// Every label shown for the first question comes back as itself.
	for _, o := range shown[0].Options {
		content, err := form.Convert([][]string{{o.Label}, {}, {}, {}})
		if err != nil {
			t.Errorf("answering %q: %v", o.Label, err)
			continue
		}
		if got := elicit.PromptAnswers(content, len(prompts)); !reflect.DeepEqual(got, [][]string{{o.Label}, {}, {}, {}}) {
			t.Errorf("answering %q gave %q", o.Label, got)
		}
	}
	if shown[0].Options[0].Label != "Small" {
		t.Errorf("label %q is not trimmed", shown[0].Options[0].Label)
	}
	// Picks come back in option order, once each; text is trimmed.
	content, err := form.Convert([][]string{{"small"}, {"Olives", "Cheese", "Olives"}, {"  ship it \n"}, {""}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"small"}, {"Cheese", "Olives"}, {"ship it"}, {}}
	if got := elicit.PromptAnswers(content, len(prompts)); !reflect.DeepEqual(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	if err := validateLikeSDK(schema, content); err != nil {
		t.Errorf("the SDK would refuse the content: %v", err)
	}
	// An answer that is not an option is refused, not passed on.
	if _, err := form.Convert([][]string{{"Medium"}, {}, {}, {}}); err == nil {
		t.Error("an answer that is not an option was accepted")
	}
}

func TestPromptAnswersReadsOnlyWhatPromptsProduce(t *testing.T) {
	content := elicit.Content{"q1": "text", "q2": []string{"a", "b"}, "q3": int64(5), "q4": true, "other": "x"}
	want := [][]string{{"text"}, {"a", "b"}, {}, {}, {}}
	if got := elicit.PromptAnswers(content, 5); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := elicit.PromptAnswers(nil, 2); !reflect.DeepEqual(got, [][]string{{}, {}}) {
		t.Errorf("nil content: %q", got)
	}
	if got := elicit.PromptAnswers(content, 0); len(got) != 0 {
		t.Errorf("no prompts: %q", got)
	}
}

func TestFromPromptsReplacesControlCharactersInShownText(t *testing.T) {
	prompts := []elicit.Prompt{{
		Question: "Delete\x1b[2J everything?\nReally?\tSure?\x07",
		Header:   "Wipe\x1b",
		Options:  []elicit.PromptOption{po("Yes", "rings\x07the bell\x9b"), po("No", "")},
	}}
	message, schema, shown, _ := fromPrompts(t, prompts, elicit.Options{})
	q := shown[0]
	if q.Question != "Delete\uFFFD[2J everything?\nReally?\tSure?\uFFFD" {
		t.Errorf("question %q", q.Question)
	}
	if q.Header != "Wipe\uFFFD" {
		t.Errorf("header %q", q.Header)
	}
	if q.Options[0].Description != "rings\uFFFDthe bell\uFFFD" {
		t.Errorf("description %q", q.Options[0].Description)
	}
	for _, s := range []string{q.Question, q.Header, q.Options[0].Description} {
		if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) {
			t.Errorf("%q still holds a control character", s)
		}
	}
	// What the agent wrote is kept as written for the agent's side.
	if !strings.Contains(message, "\x1b[2J") || !strings.Contains(string(schema), `\u001b[2J`) {
		t.Errorf("message %q / schema %s lost the agent's text", message, schema)
	}
}

func TestFromPromptsHeaderFallsBackToTheCutQuestion(t *testing.T) {
	long := "Which of the following deployment targets should we use first?"
	cases := []struct {
		name   string
		prompt elicit.Prompt
		opts   elicit.Options
		want   string
	}{
		{"short question", elicit.Prompt{Question: "Proceed?"}, elicit.Options{}, "Proceed?"},
		{"long question", elicit.Prompt{Question: long}, elicit.Options{}, "Which of the following deploy…"},
		{"blank header", elicit.Prompt{Question: long, Header: " \t "}, elicit.Options{}, "Which of the following deploy…"},
		{"lines joined", elicit.Prompt{Question: "Line one\nline   two"}, elicit.Options{}, "Line one line two"},
		{"the limit applies", elicit.Prompt{Question: long}, elicit.Options{HeaderLimit: 12}, "Which of th…"},
		{"runes, not bytes", elicit.Prompt{Question: strings.Repeat("日本", 20)}, elicit.Options{HeaderLimit: 5}, "日本日本…"},
		{"header given", elicit.Prompt{Question: long, Header: "Target"}, elicit.Options{}, "Target"},
		{"header cut too", elicit.Prompt{Question: "Q?", Header: "A header that is much too long"}, elicit.Options{HeaderLimit: 12}, "A header th…"},
	}
	for _, c := range cases {
		_, _, shown, form := fromPrompts(t, []elicit.Prompt{c.prompt}, c.opts)
		if shown[0].Header != c.want || form.Questions[0].Header != c.want {
			t.Errorf("%s: header %q (form %q), want %q", c.name, shown[0].Header, form.Questions[0].Header, c.want)
		}
	}
}

func TestFromPromptsErrorsNameTheField(t *testing.T) {
	two := []elicit.PromptOption{po("A", ""), po("B", "")}
	cases := []struct {
		name    string
		prompts []elicit.Prompt
		opts    elicit.Options
		path    string
	}{
		{"none", nil, elicit.Options{}, "questions"},
		{"empty list", []elicit.Prompt{}, elicit.Options{}, "questions"},
		{"too many", []elicit.Prompt{{Question: "a"}, {Question: "b"}, {Question: "c"}}, elicit.Options{MaxProperties: 2}, "questions"},
		{"empty question", []elicit.Prompt{{Question: ""}}, elicit.Options{}, "questions[0].question"},
		{"blank question", []elicit.Prompt{{Question: "a"}, {Question: "\u00a0\n "}}, elicit.Options{}, "questions[1].question"},
		{"multiple without options", []elicit.Prompt{{Question: "a", Multiple: true}}, elicit.Options{}, "questions[0].multiple"},
		{"empty label", []elicit.Prompt{{Question: "a", Options: []elicit.PromptOption{po("A", ""), po("", "d")}}}, elicit.Options{}, "questions[0].options[1].label"},
		{"blank label", []elicit.Prompt{{Question: "a", Options: []elicit.PromptOption{po(" \t", "")}}}, elicit.Options{}, "questions[0].options[0].label"},
		{"duplicate label", []elicit.Prompt{{Question: "a", Options: two}, {Question: "b", Options: []elicit.PromptOption{po("A", ""), po("B", ""), po("A", "")}}}, elicit.Options{}, "questions[1].options[2].label"},
		{"duplicate once trimmed", []elicit.Prompt{{Question: "a", Options: []elicit.PromptOption{po("A", ""), po(" A\n", "")}}}, elicit.Options{}, "questions[0].options[1].label"},
		{"control in a label", []elicit.Prompt{{Question: "a", Options: []elicit.PromptOption{po("A\x1b[1m", "")}}}, elicit.Options{}, "questions[0].options[0].label"},
		{"C1 control in a label", []elicit.Prompt{{Question: "a", Options: []elicit.PromptOption{po("A\u009b1m", "")}}}, elicit.Options{}, "questions[0].options[0].label"},
	}
	for _, c := range cases {
		_, _, _, err := elicit.FromPrompts(c.prompts, c.opts)
		var pe *elicit.PromptError
		if !errors.As(err, &pe) || pe.Path != c.path || pe.Problem == "" {
			t.Errorf("%s: %v (%T), want a *PromptError at %s", c.name, err, err, c.path)
			continue
		}
		if err.Error() != pe.Path+": "+pe.Problem {
			t.Errorf("%s: Error() %q", c.name, err.Error())
		}
	}
	// Exactly MaxProperties prompts are fine.
	if _, _, _, err := elicit.FromPrompts([]elicit.Prompt{{Question: "a"}, {Question: "b"}}, elicit.Options{MaxProperties: 2}); err != nil {
		t.Errorf("two prompts with MaxProperties 2: %v", err)
	}
}

// FuzzFromPrompts builds up to three prompts from the inputs: the first with
// up to two options (multiple as given), the second free text, the third
// with the options swapped and multiple inverted. Whatever they hold,
// FromPrompts must not panic; a refusal of text that can arrive as JSON
// (valid UTF-8) must be a *PromptError naming a field of the tool's input;
// and an accepted list must give a schema NewForm and the MCP SDK accept,
// one shown question per prompt with a usable header and option labels, and
// labels and text that come back through Form.Convert and PromptAnswers.
func FuzzFromPrompts(f *testing.F) {
	f.Add(uint8(1+4*2), "Which database?", "Database", "Postgres", "Relational", "SQLite", false)
	f.Add(uint8(3+4*2), "Which features?", "", "Auth", "", "Billing", true)
	f.Add(uint8(2), "  ", "H", "A", "", "A", false)
	f.Add(uint8(1+4), "Q\x1b[2J?", "Hd\x07", "L\x1b", "d\x07", "x", true)
	f.Add(uint8(3+4*2), strings.Repeat("Long question ", 10), "", " A ", "", "A", false)
	f.Add(uint8(1+4*2), "Size?", "", "K", "", "\u212a", false)
	f.Add(uint8(1+4*2), "Bytes?", "", "\xff", "", "\xfe", false)
	f.Add(uint8(3+4*2), "Deny \u202Eevorppa?", "H\u2067d\u2069", "Keep \u202Eeteled", "10 \u200F20", "Keep \u202Deteled", true)
	f.Add(uint8(1+4*2), "\u061C?", "", "a\u200Eb", "", "ab", false)
	f.Fuzz(func(t *testing.T, n uint8, question, header, label1, desc1, label2 string, multiple bool) {
		count, optionCount := int(n%4), int(n/4%3)
		options := []elicit.PromptOption{po(label1, desc1), po(label2, "")}[:optionCount]
		swapped := slices.Clone(options)
		slices.Reverse(swapped)
		all := []elicit.Prompt{
			{Question: question, Header: header, Options: options, Multiple: multiple},
			{Question: question + " (2)", Header: header},
			{Question: question, Header: header, Options: swapped, Multiple: !multiple},
		}
		prompts := all[:count]
		opts := elicit.Options{HeaderLimit: 12}
		prompted, schema, shown, err := elicit.FromPrompts(prompts, opts)
		validUTF8 := true
		for _, s := range []string{question, header, label1, desc1, label2} {
			validUTF8 = validUTF8 && utf8.ValidString(s)
		}
		if err != nil {
			var pe *elicit.PromptError
			var se *elicit.SchemaError
			switch {
			case errors.As(err, &pe):
				if !strings.HasPrefix(pe.Path, "questions") || pe.Problem == "" {
					t.Fatalf("PromptError %q", err)
				}
			case errors.As(err, &se) && !validUTF8:
				// Invalid UTF-8 cannot arrive in a tool call's JSON.
			default:
				t.Fatalf("error %v (%T) does not name a field of the tool input", err, err)
			}
			return
		}
		form, err := elicit.NewForm(prompted.Message, schema, opts)
		if err != nil {
			t.Fatalf("NewForm refuses what FromPrompts made: %v\n%s", err, schema)
		}
		if !reflect.DeepEqual(prompted, form) {
			t.Fatalf("FromPrompts' form differs from NewForm's of its message and schema:\n%+v\n%+v", prompted, form)
		}
		if _, err := sdkSchema(schema); err != nil {
			t.Fatalf("the MCP SDK cannot load the schema: %v", err)
		}
		if len(shown) != len(prompts) || len(form.Questions) != len(prompts) || strings.TrimSpace(prompted.Message) == "" {
			t.Fatalf("%d prompts, %d shown, %d form questions, message %q", len(prompts), len(shown), len(form.Questions), prompted.Message)
		}
		for i, q := range shown {
			if q.Question == "" || q.Header == "" || q.Header != form.Questions[i].Header || utf8.RuneCountInString(q.Header) > 12 {
				t.Fatalf("shown question %d: %+v (form header %q)", i, q, form.Questions[i].Header)
			}
			if len(q.Options) != len(prompts[i].Options) || (q.Multiple != nil) != (prompts[i].Multiple && len(q.Options) > 0) {
				t.Fatalf("shown question %d: %+v for prompt %+v", i, q, prompts[i])
			}
			for _, s := range append([]string{q.Question, q.Header}, optionTexts(q)...) {
				if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' || isBidiFormatting(r) }) {
					t.Fatalf("shown text %q holds a control character", s)
				}
			}
		}
		if !validUTF8 {
			return // the agent's side of invalid UTF-8 is JSON's replacement; nothing to round-trip
		}
		for i, q := range shown {
			// The operator picks the shown labels; the agent gets back the
			// labels it wrote.
			var picks, written []string
			for j, o := range q.Options {
				if o.Label == "" || strings.ContainsFunc(o.Label, unicode.IsControl) || strings.ContainsFunc(o.Label, isBidiFormatting) {
					t.Fatalf("shown label %q", o.Label)
				}
				picks = append(picks, o.Label)
				written = append(written, strings.TrimSpace(prompts[i].Options[j].Label))
			}
			if len(picks) == 0 {
				picks, written = []string{"free text"}, []string{"free text"}
			}
			if q.Multiple == nil {
				picks, written = picks[len(picks)-1:], written[len(written)-1:]
			}
			answers := make([][]string, len(shown))
			for j := range answers {
				answers[j] = []string{}
			}
			want := slices.Clone(answers)
			answers[i], want[i] = picks, written
			content, err := form.Convert(answers)
			if err != nil {
				t.Fatalf("answering question %d with %q: %v", i, picks, err)
			}
			got := elicit.PromptAnswers(content, len(prompts))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("answers %q came back as %q, want %q", answers, got, want)
			}
			if err := validateLikeSDK(schema, content); err != nil {
				t.Fatalf("the SDK refuses the content: %v", err)
			}
		}
	})
}
