package elicit_test

import (
	"encoding/json"
	"testing"

	"github.com/questiond/questiond/internal/elicit"
)

// BenchmarkElicit10 is the full path for one 10-property elicitation:
// parse and check the schema, build the questions, convert a reply.
func BenchmarkElicit10(b *testing.B) {
	raw := json.RawMessage(tenPropertySchema)
	b.ReportAllocs()
	for b.Loop() {
		form, err := elicit.NewForm("Set up the deployment", raw, elicit.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := form.Convert(tenPropertyAnswers); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineUnvalidated10 does what a bridge without validation
// does with the same input: unmarshal into a map (losing property order),
// one question per property, answers[i][0] copied into the content as a
// string. It is the floor BenchmarkElicit10 is compared with.
func BenchmarkBaselineUnvalidated10(b *testing.B) {
	raw := []byte(tenPropertySchema)
	b.ReportAllocs()
	for b.Loop() {
		var schema map[string]any
		if err := json.Unmarshal(raw, &schema); err != nil {
			b.Fatal(err)
		}
		props, _ := schema["properties"].(map[string]any)
		questions := make([]elicit.QuestionInfo, 0, len(props))
		keys := make([]string, 0, len(props))
		for key, p := range props {
			title, _ := p.(map[string]any)["title"].(string)
			if title == "" {
				title = key
			}
			questions = append(questions, elicit.QuestionInfo{Question: title, Header: title, Options: []elicit.QuestionOption{}})
			keys = append(keys, key)
		}
		content := make(map[string]any, len(keys))
		for i, key := range keys {
			if len(tenPropertyAnswers[i]) > 0 {
				content[key] = tenPropertyAnswers[i][0]
			}
		}
		if len(questions) != 10 || len(content) != 10 {
			b.Fatal("baseline lost properties")
		}
	}
}

// BenchmarkParseSchema10 and BenchmarkConvert10 split BenchmarkElicit10
// into its two halves.
func BenchmarkParseSchema10(b *testing.B) {
	raw := json.RawMessage(tenPropertySchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := elicit.ParseSchema(raw, elicit.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConvert10(b *testing.B) {
	form, err := elicit.NewForm("Set up the deployment", json.RawMessage(tenPropertySchema), elicit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := form.Convert(tenPropertyAnswers); err != nil {
			b.Fatal(err)
		}
	}
}
