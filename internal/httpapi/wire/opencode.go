package wire

import (
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// QuestionRequest is OpenCode's QuestionRequest: the list item of GET /question
// and the properties of question.asked. Field order is the recorded wire order.
type QuestionRequest struct {
	ID        string                `json:"id"`
	SessionID string                `json:"sessionID"`
	Questions []elicit.QuestionInfo `json:"questions"`
	Tool      *pending.Tool         `json:"tool,omitempty"`
}

// ToQuestionRequest is q as OpenCode's QuestionRequest.
func ToQuestionRequest(q *pending.Question) QuestionRequest {
	questions := q.Questions
	if questions == nil {
		questions = []elicit.QuestionInfo{}
	}
	return QuestionRequest{ID: q.ID, SessionID: q.SessionID, Questions: questions, Tool: q.Tool}
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

// OpenCode event types questiond publishes about questions.
const (
	EventAsked    = "question.asked"
	EventReplied  = "question.replied"
	EventRejected = "question.rejected"
)

// EndingEvent is the event that tells clients q has ended: its type and
// properties.
func EndingEvent(q *pending.Question) (string, any) {
	if q.Ended != nil && q.Ended.Ending == pending.EndReplied {
		answers := q.Ended.Answers
		if answers == nil {
			answers = [][]string{}
		}
		return EventReplied, questionReplied{SessionID: q.SessionID, RequestID: q.ID, Answers: answers}
	}
	return EventRejected, questionRejected{SessionID: q.SessionID, RequestID: q.ID}
}
