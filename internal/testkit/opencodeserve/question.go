package opencodeserve

import (
	"bytes"
	"strings"

	"github.com/questiond/questiond/internal/fakellm"
)

// QuestionTool is OpenCode's own question tool, the one its model calls
// to ask the user (offered when OPENCODE_ENABLE_QUESTION_TOOL is set, as
// the offline environment sets it).
const QuestionTool = "question"

// AskPrompt, in a user's prompt, makes the fake model call QuestionTool
// with QuestionArgs instead of the release tool; the turn after the
// question's answer is Answer's text, as after the release tool.
const AskPrompt = "Ask me where to release first."

// AskTwoPrompt, in a user's prompt, makes the fake model call
// QuestionTool with TwoQuestionArgs: RegionQuestion, then WindowQuestion.
const AskTwoPrompt = "Ask me where and when to release."

// WindowQuestion is TwoQuestionArgs' second question, WindowOptions its
// options' labels in order.
const WindowQuestion = "When should v2.3 go out?"

// WindowOptions are the labels of WindowQuestion's options, in order.
var WindowOptions = []string{"Tonight", "Monday"}

// TwoQuestionArgs are QuestionArgs with WindowQuestion after
// RegionQuestion: the TUI shows them as tabs and a review tab.
func TwoQuestionArgs() map[string]any {
	args := QuestionArgs()
	options := make([]map[string]string, len(WindowOptions))
	for i, label := range WindowOptions {
		options[i] = map[string]string{"label": label, "description": label}
	}
	args["questions"] = append(args["questions"].([]map[string]any), map[string]any{
		"question": WindowQuestion, "header": "Window", "options": options, "multiple": false,
	})
	return args
}

// RegionQuestion is the one question QuestionArgs asks, RegionOptions its
// options' labels in order.
const RegionQuestion = "Which region should v2.3 go to?"

// RegionOptions are the labels of RegionQuestion's options, in order.
var RegionOptions = []string{"Frankfurt", "Oregon"}

// QuestionArgs are the arguments of the model's call of QuestionTool:
// RegionQuestion, pick one of RegionOptions.
func QuestionArgs() map[string]any {
	options := make([]map[string]string, len(RegionOptions))
	for i, label := range RegionOptions {
		options[i] = map[string]string{"label": label, "description": "the " + label + " data centre"}
	}
	return map[string]any{"questions": []map[string]any{{
		"question": RegionQuestion, "header": "Region", "options": options, "multiple": false,
	}}}
}

// script is the fake model of Start: on a user's prompt holding AskPrompt
// (AskTwoPrompt) it calls OpenCode's question tool with QuestionArgs
// (TwoQuestionArgs), on any other prompt the release tool
// of the MCP server key (fakellm.CallThenAnswer).
func script(key string) fakellm.Script {
	release := fakellm.CallThenAnswer(key+"_"+ReleaseTool, map[string]string{"version": "v2.3"}, Answer)
	return func(r fakellm.Request) fakellm.Reply {
		if len(r.Tools) > 0 && r.LastRole() == "user" && r.Offers(QuestionTool) {
			switch prompt := r.Messages[len(r.Messages)-1].Content; {
			case bytes.Contains(prompt, []byte(AskPrompt)):
				return fakellm.Reply{Tool: QuestionTool, Args: QuestionArgs()}
			case bytes.Contains(prompt, []byte(AskTwoPrompt)):
				return fakellm.Reply{Tool: QuestionTool, Args: TwoQuestionArgs()}
			}
		}
		return release(r)
	}
}

// dismissed is what OpenCode's question tool ends with when the user
// dismisses (rejects) its question.
const dismissed = "dismissed"

// Dismissed reports whether call is OpenCode's question tool ended
// because the user dismissed its question: an error saying so.
func Dismissed(call ToolState) bool {
	return call.Status == "error" && strings.Contains(call.Error, dismissed)
}
