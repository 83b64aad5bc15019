package httpapi

import (
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// Elicitation statuses on the agent side.
const (
	statusPending  = "pending"
	statusResolved = "resolved"
)

// elicitation is what agents read about their request.
type elicitation struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	SessionID string `json:"sessionID"`
	// AskingSessionID is set when the question was asked through the
	// parent session SessionID.
	AskingSessionID string                `json:"askingSessionID,omitempty"`
	Directory       string                `json:"directory,omitempty"`
	Tool            *pending.Tool         `json:"tool,omitempty"`
	MCPTool         *pending.MCPTool      `json:"mcpTool,omitempty"`
	CreatedAt       time.Time             `json:"createdAt"`
	Deadline        *time.Time            `json:"deadline,omitempty"`
	EndedAt         *time.Time            `json:"endedAt,omitempty"`
	Ending          pending.Ending        `json:"ending,omitempty"`
	Result          *elicitResult         `json:"result,omitempty"`
	Questions       []elicit.QuestionInfo `json:"questions"`
}

func toElicitation(q *pending.Question) elicitation {
	e := elicitation{
		ID:              q.ID,
		Status:          statusPending,
		SessionID:       q.SessionID,
		AskingSessionID: q.AskingSessionID,
		Directory:       q.Directory,
		Tool:            q.Tool,
		MCPTool:         q.MCPTool,
		CreatedAt:       q.CreatedAt.UTC(),
		Questions:       q.Questions,
	}
	if e.Questions == nil {
		e.Questions = []elicit.QuestionInfo{}
	}
	if !q.Deadline.IsZero() {
		d := q.Deadline.UTC()
		e.Deadline = &d
	}
	if q.Ended != nil {
		at := q.Ended.At.UTC().Truncate(time.Millisecond)
		result := toElicitResult(q.Ended.Result)
		e.Status, e.EndedAt, e.Ending, e.Result = statusResolved, &at, q.Ended.Ending, &result
	}
	return e
}
