package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/httpapi"
)

// goldenToolResult is one recorded call of OpenCode's own question tool:
// the arguments the model sent and the text the model got back.
type goldenToolResult struct {
	Assistant struct {
		ToolCalls []struct {
			Function struct {
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"assistant"`
	Tool struct {
		Content string `json:"content"`
	} `json:"tool"`
}

var goldenAnswer = regexp.MustCompile(`"([^"]*)"="([^"]*)"`)

// The question tool takes the arguments OpenCode's question tool was called
// with, and reports the operator's answers to the model in OpenCode's exact
// words. The recorded answers are replayed as the operator's replies; a
// custom answer to a question with options (OpenCode allows those) is
// refused instead, because ask_user_question's options are choices.
func TestMCPToolResultTextMatchesOpenCode(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(goldenDir(t), "question-tool-results-as-sent-to-llm.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recorded []goldenToolResult
	if err := json.Unmarshal(data, &recorded); err != nil {
		t.Fatal(err)
	}
	if len(recorded) == 0 {
		t.Fatal("no recorded tool results")
	}
	h := newHarness(t, httpapi.Options{})
	cs := mcpConnect(t, h, "/mcp?session=ses_golden", nil, nil)
	for i, rec := range recorded {
		var args struct {
			Questions []struct {
				Options []struct{ Label string } `json:"options"`
			} `json:"questions"`
		}
		arguments := json.RawMessage(rec.Assistant.ToolCalls[0].Function.Arguments)
		if err := json.Unmarshal(arguments, &args); err != nil {
			t.Fatal(err)
		}
		var answers [][]string
		custom := false
		for j, m := range goldenAnswer.FindAllStringSubmatch(rec.Tool.Content, -1) {
			answer := []string{}
			if m[2] != "Unanswered" {
				answer = strings.Split(m[2], ", ")
			}
			for _, a := range answer {
				known := false
				for _, o := range args.Questions[j].Options {
					known = known || o.Label == a
				}
				custom = custom || !known
			}
			answers = append(answers, answer)
		}

		done := make(chan *mcp.CallToolResult, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: arguments})
			if err != nil {
				t.Errorf("recording %d: %v", i, err)
			}
			done <- res
		}()
		id := waitListed(t, h)["id"].(string)
		reply := h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": answers})
		if custom {
			if reply.Status != http.StatusBadRequest {
				t.Errorf("recording %d: a custom answer %v to a choice question was %d %s, want 400", i, answers, reply.Status, reply.Body)
			}
			h.do(http.MethodPost, "/question/"+id+"/reject", nil)
			<-done
			cancel()
			continue
		}
		if reply.Status != http.StatusOK {
			t.Fatalf("recording %d: reply %v: %d %s", i, answers, reply.Status, reply.Body)
		}
		res := <-done
		cancel()
		if res == nil {
			continue
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != rec.Tool.Content {
			t.Errorf("recording %d:\n got %s\nwant %s", i, got, rec.Tool.Content)
		}
	}
}
