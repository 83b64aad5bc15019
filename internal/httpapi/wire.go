package httpapi

import (
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// questionRequest is OpenCode's QuestionRequest: the list item of GET /question
// and the properties of question.asked. Field order is the recorded wire order.
type questionRequest struct {
	ID        string                `json:"id"`
	SessionID string                `json:"sessionID"`
	Questions []elicit.QuestionInfo `json:"questions"`
	Tool      *pending.Tool         `json:"tool,omitempty"`
}

func toQuestionRequest(q *pending.Question) questionRequest {
	questions := q.Questions
	if questions == nil {
		questions = []elicit.QuestionInfo{}
	}
	return questionRequest{ID: q.ID, SessionID: q.SessionID, Questions: questions, Tool: q.Tool}
}

// questionReplied and questionRejected are the properties of OpenCode's
// question.replied and question.rejected events.
type questionReplied struct {
	SessionID string     `json:"sessionID"`
	RequestID string     `json:"requestID"`
	Answers   [][]string `json:"answers"`
}

type questionRejected struct {
	SessionID string `json:"sessionID"`
	RequestID string `json:"requestID"`
}

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
