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
// stored question (the questions it showed, the answer's content, which
// every store gives back with the types elicit produced).
func taskResult(q *pending.Question) (*mcp.CallToolResult, error) {
	prompts := make([]elicit.Prompt, len(q.Questions))
	for i, info := range q.Questions {
		prompts[i] = elicit.Prompt{Question: info.Question, Header: info.Header}
	}
	res, out, err := toolResult(q, prompts)
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
