package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// The question tools as tasks (package mcptasks): a stateless request whose
// client declares io.modelcontextprotocol/tasks gets its question's task at
// once; tasks/get builds the tool's result from the stored question.

// resultTask is what the meter hears of a tool call that returned a task.
const resultTask = "task"

// taskQuestions gives mcptasks the service's reads and withdrawals.
type taskQuestions struct{ s *ask.Service }

func (t taskQuestions) Get(ctx context.Context, id string) (*pending.Question, error) {
	return t.s.Store().Get(ctx, id)
}

func (t taskQuestions) Withdraw(id string, ending pending.Ending) (*pending.Question, error) {
	return t.s.Withdraw(id, ending)
}

// taskResult is what the question tool would have returned for q, had its
// call waited: the same text and structured result, rebuilt from the
// stored question (the questions it showed, the answer's content).
func taskResult(q *pending.Question) (*mcp.CallToolResult, error) {
	prompts := make([]elicit.Prompt, len(q.Questions))
	for i, info := range q.Questions {
		prompts[i] = elicit.Prompt{Question: info.Question, Header: info.Header}
	}
	ended := *q
	outcome := *q.Ended
	outcome.Result.Content = storedContent(outcome.Result.Content)
	ended.Ended = &outcome
	res, out, err := toolResult(&ended, prompts)
	if err != nil {
		return nil, err
	}
	structured, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the result of question %s: %w", q.ID, err)
	}
	res.StructuredContent = json.RawMessage(structured)
	return res, nil
}

// storedContent is content as the tools read it: a store that keeps
// questions as JSON (bolt after a restart, PostgreSQL) gives several picks
// back as []any, which become []string again.
func storedContent(content elicit.Content) elicit.Content {
	out := make(elicit.Content, len(content))
	for k, v := range content {
		if list, ok := v.([]any); ok {
			picks := make([]string, 0, len(list))
			for _, item := range list {
				if s, ok := item.(string); ok {
					picks = append(picks, s)
				}
			}
			v = picks
		}
		out[k] = v
	}
	return out
}
