package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// fakeLLM is an OpenAI-compatible chat completions endpoint standing in for
// OpenCode's model, so that OpenCode asks questions with no network and no
// model: a turn that offers the question tool and ends with the user's
// message gets one call of that tool (the questions questiond makes of
// workload.SeedForm); every other turn (titles, the turn after the answer)
// gets a short text.
type fakeLLM struct {
	calls atomic.Int64
}

// fakeQuestionArgs are the question tool's arguments: the same questions,
// headers and options questiond shows for workload.SeedForm.
var fakeQuestionArgs = mustJSON(map[string]any{"questions": []map[string]any{
	{"question": "Diagnose the machine\n\nEquipment model? (pick one) (required)", "header": "Model",
		"options": []map[string]string{{"label": "SY215C", "description": ""}, {"label": "SY365H", "description": ""}}},
	{"question": "Select symptoms (pick any number)", "header": "Symptoms", "multiple": true,
		"options": []map[string]string{{"label": "Black smoke", "description": ""}, {"label": "Low power", "description": ""}, {"label": "Overheating", "description": ""}}},
}})

// startFakeLLM serves the fake model on a free loopback port and returns
// its base URL (…/v1) and a function that stops it.
func startFakeLLM() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	f := &fakeLLM{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.complete)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"fake"}]}`))
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/v1", func() { _ = srv.Close() }, nil
}

func (f *fakeLLM) complete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := f.calls.Add(1)
	ask := len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "user"
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Function.Name == "question"
	}
	ask = ask && offered
	id := fmt.Sprintf("chatcmpl-fake-%d", n)
	callID := fmt.Sprintf("call_fake_%d", n)
	text := "Thanks, noted."
	if len(req.Tools) == 0 {
		text = "Fake title"
	}
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		message := map[string]any{"role": "assistant", "content": text}
		finish := "stop"
		if ask {
			message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": callID, "type": "function", "function": map[string]any{"name": "question", "arguments": string(fakeQuestionArgs)}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(),
			"model": "fake-model", "usage": usage,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	var chunks []map[string]any
	if ask {
		chunks = []map[string]any{
			chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"index": 0, "id": callID, "type": "function", "function": map[string]any{"name": "question", "arguments": ""}}}}, nil),
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(fakeQuestionArgs)}}}}, nil),
			chunk(map[string]any{}, "tool_calls"),
		}
	} else {
		chunks = []map[string]any{
			chunk(map[string]any{"role": "assistant", "content": ""}, nil),
			chunk(map[string]any{"content": text}, nil),
			chunk(map[string]any{}, "stop"),
		}
	}
	last := chunk(map[string]any{}, nil)
	last["choices"], last["usage"] = []any{}, usage
	chunks = append(chunks, last)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(c))
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
