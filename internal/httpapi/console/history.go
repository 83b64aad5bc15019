package console

import (
	"fmt"
	"slices"
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
//
// An ended question's message shows what the agent received: an answer left
// blank that the schema's default filled in reads "<default> (default)"
// (the TUI would show "(no answer)"), and a question that ended without
// answers gets a closing text part saying why (the TUI shows a question
// tool's error nowhere: only its title).
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
			state.Title = askedTitle(len(questions))
			state.Metadata = &toolMetadata{Answers: receivedAnswers(q), Truncated: false}
			state.Output = answeredOutput(questions, state.Metadata.Answers)
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
	if state.Status == "error" {
		parts = append(parts, textPart{
			ID: "prt_" + suffix + "3", SessionID: q.SessionID, MessageID: messageID, Type: "text", Text: "*" + state.Error + ".*",
		})
	}
	return consoleMessage{Info: info, Parts: parts}
}

// receivedAnswers are the operator's answers to q, with those left blank
// that a default filled in shown as that default.
func receivedAnswers(q *pending.Question) [][]string {
	answers := slices.Clone(q.Ended.Answers)
	if answers == nil {
		answers = [][]string{}
	}
	for i, filled := range q.Ended.Filled {
		if i < len(answers) && len(filled) > 0 {
			answers[i] = []string{strings.Join(filled, ", ") + " (default)"}
		}
	}
	return answers
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
