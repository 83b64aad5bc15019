package mcpserver

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/questiond/questiond/internal/elicit"
)

// askSchemas are the question tools' input and output schemas, written out
// rather than inferred from askInput and askOutput so that every field tells
// the model what it is for. Emptiness is left to elicit.FromPrompts, whose
// errors name the question by index. An endpoint builds them once: the SDK caches
// what it resolves by pointer.
func askSchemas(opts elicit.Options) (input, output *jsonschema.Schema) {
	maxQuestions := opts.MaxProperties
	if maxQuestions <= 0 {
		maxQuestions = elicit.DefaultMaxProperties
	}
	option := &jsonschema.Schema{
		Type:                 "object",
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Required:             []string{"label"},
		Properties: map[string]*jsonschema.Schema{
			"label":       {Type: "string", Description: "Display text of the choice (1-5 words, concise); it is also the answer"},
			"description": {Type: "string", Description: "Explanation of the choice"},
		},
		PropertyOrder: []string{"label", "description"},
	}
	question := &jsonschema.Schema{
		Type:                 "object",
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Required:             []string{"question"},
		Properties: map[string]*jsonschema.Schema{
			"question": {Type: "string", Description: "The complete question"},
			"header":   {Type: "string", Description: "Very short label (max 30 chars)"},
			"options": {Type: "array", Items: option,
				Description: "Available choices; leave out for a question answered in free text"},
			"multiple": {Type: "boolean", Description: "Allow selecting several choices (only with options)"},
		},
		PropertyOrder: []string{"question", "header", "options", "multiple"},
	}
	input = &jsonschema.Schema{
		Type:                 "object",
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		Required:             []string{"questions"},
		Properties: map[string]*jsonschema.Schema{
			"questions": {Type: "array", Items: question, MaxItems: new(maxQuestions),
				Description: "Questions to ask, in order"},
		},
	}
	output = &jsonschema.Schema{
		Type:     "object",
		Required: []string{"action"},
		Properties: map[string]*jsonschema.Schema{
			"action": {Type: "string", Enum: []any{"accept", "decline", "cancel"},
				Description: "accept: answered; decline: dismissed; cancel: no answer (timeout, withdrawn, or questiond stopped)"},
			"answers": {Type: "array", Items: &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}},
				Description: "On accept, one list per question: the picked labels, the free text, or empty when unanswered"},
		},
		PropertyOrder: []string{"action", "answers"},
	}
	return input, output
}
