package console

import (
	"fmt"
	"strings"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/pending"
)

// questionMessage is one question as the assistant message OpenCode records
// when its own question tool runs: the agent's message as markdown text, then
// the tool call, running while the question is pending and completed (or
// error) once it has ended. Its ids are derived from the question's id, so
// they are the same on every call and ascend in creation order, as the TUI's
// sorted stores need; the digit suffixes keep the text part first.
func questionMessage(q *pending.Question) consoleMessage {
	suffix := strings.TrimPrefix(q.ID, ident.Question+"_")
	messageID := ident.Message + "_" + suffix
	created := q.CreatedAt.UnixMilli()
	questions := q.Questions
	if questions == nil {
		questions = []elicit.QuestionInfo{}
	}
	info := assistantMessage{
		ID: messageID, SessionID: q.SessionID, Role: "assistant",
		Time:     messageTime{Created: created},
		ParentID: messageID, ModelID: consoleModelID, ProviderID: consoleProviderID,
		Mode: consoleAgent, Agent: consoleAgent,
		Path: messagePath{Cwd: q.Directory, Root: q.Directory},
	}
	state := toolState{Status: "running", Input: toolInput{Questions: questions}, Time: toolStateTimes{Start: created}}
	if q.Ended != nil {
		end := q.Ended.At.UnixMilli()
		info.Time.Completed, info.Finish, state.Time.End = &end, "tool-calls", &end
		if q.Ended.Ending == pending.EndReplied {
			state.Status = "completed"
			state.Output = answeredOutput(questions, q.Ended.Answers)
			state.Title = askedTitle(len(questions))
			state.Metadata = &toolMetadata{Answers: q.Ended.Answers, Truncated: false}
			if state.Metadata.Answers == nil {
				state.Metadata.Answers = [][]string{}
			}
		} else {
			state.Status = "error"
			state.Error = endedWithoutAnswers(q.Ended)
		}
	}
	parts := make([]any, 0, 2)
	if text := strings.TrimSpace(q.Message); text != "" {
		parts = append(parts, textPart{
			ID: "prt_" + suffix + "1", SessionID: q.SessionID, MessageID: messageID, Type: "text", Text: elicit.Shown(q.Message),
		})
	}
	parts = append(parts, toolPart{
		ID: "prt_" + suffix + "2", SessionID: q.SessionID, MessageID: messageID, Type: "tool",
		CallID: "call_" + suffix, Tool: "question", State: state,
	})
	return consoleMessage{Info: info, Parts: parts}
}

// answeredOutput is the tool output OpenCode gives the model after a reply.
func answeredOutput(questions []elicit.QuestionInfo, answers [][]string) string {
	pairs := make([]string, 0, len(questions))
	for i, question := range questions {
		var answer []string
		if i < len(answers) {
			answer = answers[i]
		}
		pairs = append(pairs, fmt.Sprintf("%q=%q", question.Question, strings.Join(answer, ", ")))
	}
	return "User has answered your questions: " + strings.Join(pairs, ", ") + ". You can now continue with the user's answers in mind."
}

func askedTitle(n int) string {
	if n == 1 {
		return "Asked 1 question"
	}
	return fmt.Sprintf("Asked %d questions", n)
}

// endedWithoutAnswers says why a question has no answers, in the words the
// TUI shows under the tool call.
func endedWithoutAnswers(o *pending.Outcome) string {
	switch o.Ending {
	case pending.EndRejected:
		if o.Result.Action == pending.ActionDecline {
			return "The user declined this question"
		}
		return "The user dismissed this question"
	case pending.EndTimeout:
		return "The question timed out without an answer"
	case pending.EndWithdrawn:
		return "The agent withdrew this question"
	case pending.EndDisconnected:
		return "The agent stopped waiting for an answer"
	case pending.EndShutdown:
		return "questiond stopped before this question was answered"
	}
	return "This question ended without answers (" + string(o.Ending) + ")"
}
