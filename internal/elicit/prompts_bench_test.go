package elicit_test

import (
	"testing"

	"github.com/questiond/questiond/internal/elicit"
)

// benchPrompts are bench/mcp_test.go's tool input: one question with three
// options and one free-text question.
var benchPrompts = []elicit.Prompt{
	{Question: "Equipment model?", Header: "Model", Options: []elicit.PromptOption{
		{Label: "SY215C", Description: "21 t excavator"}, {Label: "SY365H", Description: "36 t excavator"}, {Label: "SY75C", Description: "7 t excavator"}}},
	{Question: "Describe the symptoms", Header: "Symptoms"},
}

// BenchmarkToolSchema is the schema work of one ask_user_question call:
// FromPrompts builds, parses and returns the form the question is stored
// with (questiond before issue 16 parsed the same schema once more).
func BenchmarkToolSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := elicit.FromPrompts(benchPrompts, elicit.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
