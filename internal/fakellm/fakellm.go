// Package fakellm is an OpenAI-compatible chat completions endpoint that
// stands in for OpenCode's model, so that the real OpenCode runs with no
// network and no model: what it answers each request is scripted by its
// user (a tool call with given arguments, or text), which is how the
// side-by-side benchmark makes OpenCode ask questions and the end-to-end
// tests make it call an MCP server's tool. It is test support, but imports
// no testing package, so programs (bench/cmd/sidebyside) use it too.
package fakellm

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// ModelID is the only model the endpoint lists; OpenCode's config names it
// (Config).
const ModelID = "fake-model"

// Request is what the fake model was asked: one chat completions request.
type Request struct {
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools"`
}

// Message is one message of a request's conversation. Content is kept as
// it came (a string, an array of parts or null).
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// Tool is one tool a request offers the model.
type Tool struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// LastRole is the role of the request's last message ("" when it has none).
func (r Request) LastRole() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Role
}

// Offers reports whether the request offers the model a tool named name.
func (r Request) Offers(name string) bool {
	return slices.ContainsFunc(r.Tools, func(t Tool) bool { return t.Function.Name == name })
}

// Reply is one turn of the model: a call of Tool with Args (any value that
// marshals to a JSON object), or, when Tool is empty, Text.
type Reply struct {
	Tool string
	Args any
	Text string
}

// Script decides the model's reply to each request. It is called from the
// endpoint's handlers, possibly concurrently.
type Script func(Request) Reply

// TitleText is what CallThenAnswer replies to a request that offers no
// tools (OpenCode asks for a session's title that way).
const TitleText = "Fake title"

// CallThenAnswer scripts the usual turns of a session: the user's prompt
// (the last message is the user's, and tool is offered) is answered with
// a call of tool with args; any later turn (after the tool's result) with
// text; a request that offers no tools (a title) with TitleText.
func CallThenAnswer(tool string, args any, text string) Script {
	return func(r Request) Reply {
		switch {
		case len(r.Tools) == 0:
			return Reply{Text: TitleText}
		case r.LastRole() == "user" && r.Offers(tool):
			return Reply{Tool: tool, Args: args}
		default:
			return Reply{Text: text}
		}
	}
}

// Server is the fake model, serving on a loopback port until Close.
type Server struct {
	// URL is the endpoint's base URL, ending in /v1, as OpenCode's
	// provider options want it (Config).
	URL string

	script Script
	srv    *http.Server

	mu       sync.Mutex
	requests []Request
}

// Start serves the fake model on a free loopback port, replying as script
// says.
func Start(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake model: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/v1", script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"` + ModelID + `","object":"model","owned_by":"fake"}]}`))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving.
func (s *Server) Close() { _ = s.srv.Close() }

// Requests are the requests answered so far, in the order they came.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Config is an OpenCode provider block ("provider": {"fake": Config(…)})
// whose only model is this one, able to call tools.
func (s *Server) Config() map[string]any {
	return map[string]any{
		"npm": "@ai-sdk/openai-compatible", "name": "Fake LLM",
		"options": map[string]string{"baseURL": s.URL, "apiKey": "fake-key"},
		"models": map[string]any{ModelID: map[string]any{"name": "Fake Model", "tool_call": true,
			"limit": map[string]int{"context": 128000, "output": 4096}}},
	}
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()
	reply := s.script(req)
	var args []byte
	if reply.Tool != "" {
		var err error
		if args, err = json.Marshal(reply.Args); err != nil {
			http.Error(w, "fake model: the script's arguments: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	id := fmt.Sprintf("chatcmpl-fake-%d", n)
	callID := fmt.Sprintf("call_fake_%d", n)
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		message := map[string]any{"role": "assistant", "content": reply.Text}
		finish := "stop"
		if reply.Tool != "" {
			message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": callID, "type": "function", "function": map[string]any{"name": reply.Tool, "arguments": string(args)}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(),
			"model": ModelID, "usage": usage,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": ModelID,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	var chunks []map[string]any
	if reply.Tool != "" {
		chunks = []map[string]any{
			chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"index": 0, "id": callID, "type": "function", "function": map[string]any{"name": reply.Tool, "arguments": ""}}}}, nil),
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(args)}}}}, nil),
			chunk(map[string]any{}, "tool_calls"),
		}
	} else {
		chunks = []map[string]any{
			chunk(map[string]any{"role": "assistant", "content": ""}, nil),
			chunk(map[string]any{"content": reply.Text}, nil),
			chunk(map[string]any{}, "stop"),
		}
	}
	last := chunk(map[string]any{}, nil)
	last["choices"], last["usage"] = []any{}, usage
	chunks = append(chunks, last)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for _, c := range chunks {
		data, _ := json.Marshal(c) // maps of strings, numbers and nil: cannot fail
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
