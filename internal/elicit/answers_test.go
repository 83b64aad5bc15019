package elicit_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/elicit"
)

func mustForm(t testing.TB, schema string) *elicit.Form {
	t.Helper()
	form, err := elicit.NewForm("Please answer", json.RawMessage(schema), elicit.Options{})
	if err != nil {
		t.Fatalf("NewForm: %v", err)
	}
	return form
}

// convertOK converts answers, checks the content against the SDK's
// validation, and compares it with want.
func convertOK(t *testing.T, schema string, answers [][]string, want elicit.Content) {
	t.Helper()
	form := mustForm(t, schema)
	got, err := form.Convert(answers)
	if err != nil {
		t.Fatalf("Convert(%q): %v", answers, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Convert(%q)\n got %#v\nwant %#v", answers, got, want)
	}
	checkContent(t, form, schema, got)
	roundTripThroughSDK(t, schema, got)
}

func TestConvertSeedRFCExample(t *testing.T) {
	convertOK(t, seedRFCSchema, [][]string{{"SY215C"}, {"Black smoke"}},
		elicit.Content{"q0": "SY215C", "q1": []string{"Black smoke"}})
}

func TestConvertKeepsPropertyKeys(t *testing.T) {
	convertOK(t, namedKeysSchema, [][]string{{"SY215C"}, {"Black smoke"}},
		elicit.Content{"model": "SY215C", "symptoms": []string{"Black smoke"}})
}

func TestConvertCombinedFixture(t *testing.T) {
	// What an operator sends: labels for enums, text for free-text
	// questions, nothing where the default is fine.
	answers := [][]string{
		{"api"},     // name
		{},          // contact: optional, skipped
		{},          // start: optional, skipped
		{},          // replicas: default 2
		{},          // ratio: optional, skipped
		{"Yes"},     // dryRun
		{"prod"},    // env
		{"Ireland"}, // region → eu-west-1
		{},          // tier: optional, skipped
		{"web"},     // tags
		{"Ada"},     // owners → u1
	}
	convertOK(t, combinedSchema, answers, elicit.Content{
		"name": "api", "env": "prod", "owners": []string{"u1"}, "replicas": int64(2),
		"dryRun": true, "region": "eu-west-1", "tags": []string{"web"},
	})
}

func TestConvertCombinedFixtureFullyAnswered(t *testing.T) {
	answers := [][]string{
		{"  api  "}, {"ops@example.com"}, {"2026-02-28"}, {"10"}, {"0.5"}, {"no"},
		{"Staging"}, {"us-east-1"}, {"Medium"}, {"cache", "web", "web"}, {"Linus", "Ada"},
	}
	convertOK(t, combinedSchema, answers, elicit.Content{
		"name": "api", "contact": "ops@example.com", "start": "2026-02-28", "replicas": int64(10),
		"ratio": 0.5, "dryRun": false, "env": "staging", "region": "us-east-1", "tier": "m",
		"tags": []string{"web", "cache"}, "owners": []string{"u1", "u2"},
	})
}

func TestConvertConformanceEnums(t *testing.T) {
	answers := [][]string{
		{"option1"}, {"First Option"}, {"Option One"}, {"option1", "option2"}, {"First Choice", "Second Choice"},
	}
	convertOK(t, enumsSchema, answers, elicit.Content{
		"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
		"untitledMulti": []string{"option1", "option2"}, "titledMulti": []string{"value1", "value2"},
	})
}

func TestConvertConformanceDefaults(t *testing.T) {
	for name, answers := range map[string][][]string{
		"empty lists":   {{}, {}, {}, {}, {}},
		"blank entries": {{""}, {" "}, {"\t"}, {"", "\n"}, {"  "}},
	} {
		t.Run(name, func(t *testing.T) {
			convertOK(t, defaultsSchema, answers, elicit.Content{
				"name": "John Doe", "age": int64(30), "score": 95.5, "status": "active", "verified": true,
			})
		})
	}
}

func TestConvertItemsOneOf(t *testing.T) {
	convertOK(t, oneOfMultiSchema, [][]string{{"Blue", "Red"}}, elicit.Content{"colors": []string{"#f00", "#00f"}})
	convertOK(t, oneOfMultiSchema, [][]string{{}}, elicit.Content{"colors": []string{"#0f0"}})
}

func TestConvertRequiredWithDefaultAlwaysPresent(t *testing.T) {
	// The Go SDK rejects a required property that is missing even when it
	// has a default, so the default must be filled in.
	schema := `{"type":"object","properties":{"n":{"type":"integer","default":5}},"required":["n"]}`
	convertOK(t, schema, [][]string{{}}, elicit.Content{"n": int64(5)})
}

func TestConvertDefaultIsACopy(t *testing.T) {
	form := mustForm(t, oneOfMultiSchema)
	first, err := form.Convert([][]string{{}})
	if err != nil {
		t.Fatal(err)
	}
	first["colors"].([]string)[0] = "mutated"
	second, err := form.Convert([][]string{{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := second["colors"].([]string)[0]; got != "#0f0" {
		t.Fatalf("a caller's change leaked into the form's default: %q", got)
	}
}

// One-property schemas and their conversions, per kind.
func TestConvertValues(t *testing.T) {
	tests := []struct {
		name, property string
		answer         []string
		want           any // nil: key absent
	}{
		{"string trimmed", `{"type":"string"}`, []string{"  hi there \n"}, "hi there"},
		{"string unicode length", `{"type":"string","maxLength":2}`, []string{"日本"}, "日本"},
		{"string email", `{"type":"string","format":"email"}`, []string{"a.b+c@example.org"}, "a.b+c@example.org"},
		{"string uri", `{"type":"string","format":"uri"}`, []string{"https://example.com/a?b=c#d"}, "https://example.com/a?b=c#d"},
		{"string urn", `{"type":"string","format":"uri"}`, []string{"urn:isbn:0451450523"}, "urn:isbn:0451450523"},
		{"string date leap day", `{"type":"string","format":"date"}`, []string{"2024-02-29"}, "2024-02-29"},
		{"string date-time", `{"type":"string","format":"date-time"}`, []string{"2026-01-31T09:30:00.5+01:00"}, "2026-01-31T09:30:00.5+01:00"},
		{"string date-time lower case", `{"type":"string","format":"date-time"}`, []string{"2026-01-31t09:30:00z"}, "2026-01-31t09:30:00z"},
		{"string pattern", `{"type":"string","pattern":"^[a-z]+$"}`, []string{"abc"}, "abc"},
		{"optional string empty", `{"type":"string"}`, []string{}, nil},
		{"number", `{"type":"number"}`, []string{"2.5"}, 2.5},
		{"number exponent", `{"type":"number"}`, []string{"1e3"}, 1000.0},
		{"number plus sign", `{"type":"number"}`, []string{"+.5"}, 0.5},
		{"number minus zero", `{"type":"number"}`, []string{"-0"}, 0.0},
		{"number huge", `{"type":"number"}`, []string{"1e308"}, 1e308},
		{"number at bounds", `{"type":"number","minimum":-1,"maximum":1}`, []string{"-1"}, -1.0},
		{"integer", `{"type":"integer"}`, []string{" 42 "}, int64(42)},
		{"integer zero fraction", `{"type":"integer"}`, []string{"3.0"}, int64(3)},
		{"integer exponent", `{"type":"integer"}`, []string{"1e3"}, int64(1000)},
		{"integer minus zero", `{"type":"integer"}`, []string{"-0"}, int64(0)},
		{"integer 2^53", `{"type":"integer"}`, []string{"9007199254740992"}, int64(9007199254740992)},
		{"integer -2^53", `{"type":"integer"}`, []string{"-9007199254740992"}, int64(-9007199254740992)},
		{"boolean yes", `{"type":"boolean"}`, []string{"Yes"}, true},
		{"boolean lower no", `{"type":"boolean"}`, []string{"no"}, false},
		{"boolean true", `{"type":"boolean"}`, []string{"TRUE"}, true},
		{"boolean false default", `{"type":"boolean","default":false}`, []string{}, false},
		{"enum by label", `{"type":"string","oneOf":[{"const":"a","title":"Alpha"}]}`, []string{"Alpha"}, "a"},
		{"enum by value", `{"type":"string","oneOf":[{"const":"a","title":"Alpha"}]}`, []string{"a"}, "a"},
		{"enum by folded label", `{"type":"string","oneOf":[{"const":"a","title":"Alpha"}]}`, []string{" ALPHA "}, "a"},
		{"enum label before value", `{"type":"string","oneOf":[{"const":"x","title":"y"},{"const":"y","title":"z"}]}`, []string{"y"}, "x"},
		{"enum unicode label", `{"type":"string","enum":["k"],"enumNames":["Ünïcödé ✓"]}`, []string{"ünïcödé ✓"}, "k"},
		{"enum exact among case variants", `{"type":"string","enum":["Red","red"]}`, []string{"red"}, "red"},
		{"multi deduplicated in schema order", `{"type":"array","items":{"type":"string","enum":["a","b","c"]}}`, []string{"c", "a", "c"}, []string{"a", "c"}},
		{"multi empty optional", `{"type":"array","items":{"type":"string","enum":["a"]}}`, []string{}, nil},
		{"multi empty default", `{"type":"array","items":{"type":"string","enum":["a"]},"default":[]}`, []string{}, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			schema := `{"type":"object","properties":{"p":` + tc.property + `}}`
			want := elicit.Content{}
			if tc.want != nil {
				want["p"] = tc.want
			}
			convertOK(t, schema, [][]string{tc.answer}, want)
		})
	}
}

func TestConvertRejects(t *testing.T) {
	tests := []struct {
		name, property string
		answer         []string
		want           string // the Problem
	}{
		{"required empty", `{"type":"string"}`, []string{" "}, "an answer is required"},
		{"required multi empty", `{"type":"array","items":{"type":"string","enum":["a"]}}`, []string{}, "an answer is required"},
		{"two answers", `{"type":"string"}`, []string{"a", "b"}, "expects one answer, got 2"},
		{"two enum answers", `{"type":"string","enum":["a","b"]}`, []string{"a", "b"}, "expects one answer, got 2"},
		{"too short", `{"type":"string","minLength":3}`, []string{"ab"}, `"ab" is shorter than 3 characters`},
		{"too long in runes", `{"type":"string","maxLength":1}`, []string{"日本"}, `"日本" is longer than 1 character`},
		{"email with name", `{"type":"string","format":"email"}`, []string{"Ada <ada@example.com>"}, `"Ada <ada@example.com>" is not an email address (name@example.com)`},
		{"email without at", `{"type":"string","format":"email"}`, []string{"ada"}, `"ada" is not an email address (name@example.com)`},
		{"relative uri", `{"type":"string","format":"uri"}`, []string{"/just/a/path"}, `"/just/a/path" is not an absolute URI with a scheme (https://example.com/…)`},
		{"uri with space", `{"type":"string","format":"uri"}`, []string{"https://x/a b"}, `"https://x/a b" is not an absolute URI with a scheme (https://example.com/…)`},
		{"date does not exist", `{"type":"string","format":"date"}`, []string{"2023-02-29"}, `"2023-02-29" is not a date (YYYY-MM-DD)`},
		{"date wrong shape", `{"type":"string","format":"date"}`, []string{"1/2/2024"}, `"1/2/2024" is not a date (YYYY-MM-DD)`},
		{"date-time without zone", `{"type":"string","format":"date-time"}`, []string{"2026-01-31T09:30:00"}, `"2026-01-31T09:30:00" is not an RFC 3339 date-time (2006-01-02T15:04:05Z)`},
		{"date-time comma fraction", `{"type":"string","format":"date-time"}`, []string{"2026-01-31T09:30:00,5Z"}, `"2026-01-31T09:30:00,5Z" is not an RFC 3339 date-time (2006-01-02T15:04:05Z)`},
		{"pattern", `{"type":"string","pattern":"^[a-z]+$"}`, []string{"ABC"}, `"ABC" does not match the pattern ^[a-z]+$`},
		{"not an integer", `{"type":"integer"}`, []string{"abc"}, `"abc" is not an integer`},
		{"fractional integer", `{"type":"integer"}`, []string{"3.5"}, `"3.5" is not an integer`},
		{"nearly whole integer", `{"type":"integer"}`, []string{"3.0000000000000000001"}, `"3.0000000000000000001" is not an integer`},
		{"integer above 2^53", `{"type":"integer"}`, []string{"9007199254740993"}, `"9007199254740993" is outside the safe integer range ±2^53`},
		{"integer 1e400", `{"type":"integer"}`, []string{"1e400"}, `"1e400" is out of range`},
		{"integer below minimum", `{"type":"integer","minimum":1}`, []string{"0"}, "0 is less than the minimum 1"},
		{"not a number", `{"type":"number"}`, []string{"abc"}, `"abc" is not a number`},
		{"number hex", `{"type":"number"}`, []string{"0x1p4"}, `"0x1p4" is not a number`},
		{"number underscores", `{"type":"number"}`, []string{"1_000"}, `"1_000" is not a number`},
		{"number thousands", `{"type":"number"}`, []string{"1,000"}, `"1,000" is not a number`},
		{"number inf", `{"type":"number"}`, []string{"Inf"}, `"Inf" is not a number`},
		{"number nan", `{"type":"number"}`, []string{"NaN"}, `"NaN" is not a number`},
		{"number 1e400", `{"type":"number"}`, []string{"1e400"}, `"1e400" is out of range`},
		{"number underflow", `{"type":"number"}`, []string{"1e-400"}, `"1e-400" is too close to zero to represent`},
		{"number above maximum", `{"type":"number","maximum":1}`, []string{"1.5"}, "1.5 is greater than the maximum 1"},
		{"boolean", `{"type":"boolean"}`, []string{"maybe"}, `"maybe" is not Yes or No`},
		{"enum unknown", `{"type":"string","oneOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Beta"}]}`, []string{"Gamma"}, `"Gamma" is not one of the options: "Alpha", "Beta"`},
		{"enum ambiguous case", `{"type":"string","enum":["Red","red"]}`, []string{"RED"}, `"RED" is not one of the options: "Red", "red"`},
		{"multi unknown", `{"type":"array","items":{"type":"string","enum":["a"]}}`, []string{"a", "z"}, `"z" is not one of the options: "a"`},
		{"multi too many", `{"type":"array","maxItems":1,"items":{"type":"string","enum":["a","b"]}}`, []string{"a", "b"}, "pick at most 1 choice, got 2"},
		{"multi too few", `{"type":"array","minItems":2,"items":{"type":"string","enum":["a","b"]}}`, []string{"a", "a"}, "pick at least 2 choices, got 1"},
		{"invalid utf-8", `{"type":"string"}`, []string{"\xff"}, "the answer is not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			schema := `{"type":"object","properties":{"p":` + tc.property + `},"required":["p"]}`
			form := mustForm(t, schema)
			_, err := form.Convert([][]string{tc.answer})
			var ae *elicit.AnswerError
			if !errors.As(err, &ae) {
				t.Fatalf("Convert(%q) = %v, want an *AnswerError", tc.answer, err)
			}
			if ae.Index != 0 || ae.Header != "p" || ae.Problem != tc.want {
				t.Fatalf("got  %#v\nwant problem %q", ae, tc.want)
			}
		})
	}
}

func TestConvertErrorNamesQuestion(t *testing.T) {
	form := mustForm(t, combinedSchema)
	answers := [][]string{{"api"}, {}, {}, {"abc"}, {}, {}, {"prod"}, {}, {}, {}, {"Ada"}}
	_, err := form.Convert(answers)
	want := `answers[3] ("Replicas"): "abc" is not an integer`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestConvertAnswerCount(t *testing.T) {
	form := mustForm(t, namedKeysSchema)
	for _, answers := range [][][]string{nil, {{"SY215C"}}, {{"SY215C"}, {}, {}}} {
		_, err := form.Convert(answers)
		var ae *elicit.AnswerError
		if !errors.As(err, &ae) || ae.Index != -1 {
			t.Fatalf("Convert(%q) = %v, want a list-level *AnswerError", answers, err)
		}
		if !strings.HasPrefix(err.Error(), "answers: expected one answer per question: got ") || !strings.HasSuffix(err.Error(), " for 2 questions") {
			t.Fatalf("unexpected message %q", err)
		}
	}
}

func TestConvertOnZeroForm(t *testing.T) {
	var form *elicit.Form
	if _, err := form.Convert(nil); err == nil {
		t.Fatal("a nil form converted answers")
	}
	if _, err := (&elicit.Form{}).Convert(nil); err == nil {
		t.Fatal("an empty form converted answers")
	}
}

func TestConvertHandBuiltSchema(t *testing.T) {
	// A Form assembled by hand (not by NewForm) still converts, looking up
	// choices and compiling the pattern on the fly.
	form := &elicit.Form{
		Schema: &elicit.Schema{Properties: []elicit.Property{
			{Key: "c", Kind: elicit.KindSingleEnum, Choices: []elicit.Choice{{Value: "a", Label: "Alpha"}}},
			{Key: "s", Kind: elicit.KindString, Pattern: "^x"},
		}},
		Questions: []elicit.QuestionInfo{{Header: "C"}, {Header: "S"}},
	}
	got, err := form.Convert([][]string{{"alpha"}, {"xy"}})
	if err != nil || !reflect.DeepEqual(got, elicit.Content{"c": "a", "s": "xy"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := form.Convert([][]string{{"alpha"}, {"yx"}}); err == nil {
		t.Fatal("pattern not enforced on a hand-built property")
	}
}

func TestAnswerErrorFormat(t *testing.T) {
	if got := (&elicit.AnswerError{Index: 2, Header: "Replicas", Problem: `"abc" is not an integer`}).Error(); got != `answers[2] ("Replicas"): "abc" is not an integer` {
		t.Fatalf("got %s", got)
	}
	if got := (&elicit.AnswerError{Index: -1, Problem: "got 1 answers for 2 questions"}).Error(); got != "answers: got 1 answers for 2 questions" {
		t.Fatalf("got %s", got)
	}
}

func TestFormIsSafeForConcurrentUse(t *testing.T) {
	form := mustForm(t, tenPropertySchema)
	want, err := form.Convert(tenPropertyAnswers)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := form.Convert(tenPropertyAnswers)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("concurrent Convert: %v, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
