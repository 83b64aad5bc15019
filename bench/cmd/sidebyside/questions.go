package main

import (
	"encoding/json"

	"github.com/questiond/questiond/internal/fakellm"
)

// fakeQuestionArgs are the arguments of the question tool the fake model
// calls: the same questions, headers and options questiond shows for
// workload.SeedForm.
var fakeQuestionArgs = map[string]any{"questions": []map[string]any{
	{"question": "Diagnose the machine\n\nEquipment model? (pick one) (required)", "header": "Model",
		"options": []map[string]string{{"label": "SY215C", "description": ""}, {"label": "SY365H", "description": ""}}},
	{"question": "Select symptoms (pick any number)", "header": "Symptoms", "multiple": true,
		"options": []map[string]string{{"label": "Black smoke", "description": ""}, {"label": "Low power", "description": ""}, {"label": "Overheating", "description": ""}}},
}}

// askSeedForm scripts the fake model for the benchmark: each prompted
// session asks workload.SeedForm's questions with OpenCode's question
// tool, and the turn after the answer is a short text.
var askSeedForm = fakellm.CallThenAnswer("question", fakeQuestionArgs, "Thanks, noted.")

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
