package elicit

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Content is the content of an accepted MCP ElicitResult, keyed by the
// schema's property names; values are string, float64, int64, bool or []string.
type Content map[string]any

// AnswerError says which answer is wrong and why. Error() is
// `answers[<Index>] ("<Header>"): <Problem>`, or just `answers: <Problem>`
// when Index is -1 (a problem with the whole list, such as its length).
type AnswerError struct {
	Index   int
	Header  string
	Problem string
}

func (e *AnswerError) Error() string {
	if e.Index < 0 {
		return "answers: " + e.Problem
	}
	return fmt.Sprintf("answers[%d] (%q): %s", e.Index, e.Header, e.Problem)
}

// Convert turns an OpenCode reply (answers[i] answers Questions[i]) into typed
// content that satisfies the schema. Every failure is an *AnswerError.
func (f *Form) Convert(answers [][]string) (Content, error) {
	if f == nil || f.Schema == nil || len(f.Questions) != len(f.Schema.Properties) {
		return nil, &AnswerError{Index: -1, Problem: "the form has no questions to answer"}
	}
	if len(answers) != len(f.Questions) {
		return nil, &AnswerError{Index: -1, Problem: answerCountProblem(len(answers), len(f.Questions))}
	}
	content := make(Content, len(answers))
	for i := range f.Schema.Properties {
		p := &f.Schema.Properties[i]
		value, present, problem := p.convert(answers[i])
		if problem != "" {
			return nil, &AnswerError{Index: i, Header: f.Questions[i].Header, Problem: problem}
		}
		if present {
			content[p.Key] = value
		}
	}
	return content, nil
}

// convert turns one answer into the property's value; present is false when
// an optional property without default was left empty.
func (p *Property) convert(answer []string) (value any, present bool, problem string) {
	entries, problem := nonBlank(answer)
	if problem != "" {
		return nil, false, problem
	}
	if len(entries) == 0 {
		return p.emptyAnswer()
	}
	if p.Kind == KindMultiSelect {
		value, problem = p.convertPicks(entries)
	} else if len(entries) > 1 {
		return nil, false, fmt.Sprintf("expects one answer, got %d", len(entries))
	} else {
		value, problem = p.convertSingle(entries[0])
	}
	if problem != "" {
		return nil, false, problem
	}
	return value, true, ""
}

// nonBlank drops entries that are empty or only whitespace, which is how an
// operator leaves a question unanswered.
func nonBlank(answer []string) ([]string, string) {
	entries := make([]string, 0, len(answer))
	for _, s := range answer {
		if !utf8.ValidString(s) {
			return nil, "the answer is not valid UTF-8"
		}
		if strings.TrimSpace(s) != "" {
			entries = append(entries, s)
		}
	}
	return entries, ""
}

func (p *Property) emptyAnswer() (any, bool, string) {
	switch {
	case p.Default != nil:
		if d, ok := p.Default.([]string); ok {
			return slices.Clone(d), true, "" // callers may modify content
		}
		return p.Default, true, ""
	case p.Required:
		return nil, false, "an answer is required"
	}
	return nil, false, ""
}

func (p *Property) convertSingle(entry string) (any, string) {
	text := strings.TrimSpace(entry)
	switch p.Kind {
	case KindString:
		return text, p.textProblem(text)
	case KindNumber, KindInteger:
		value, problem := p.parseNumeric(text)
		if problem == "" {
			problem = p.rangeProblem(value)
		}
		return value, problem
	case KindBoolean:
		if b, ok := parseBoolText(text); ok {
			return b, ""
		}
		return nil, quote(entry) + " is not Yes or No"
	case KindSingleEnum:
		if i, ok := p.index().match(entry); ok {
			return p.Choices[i].Value, ""
		}
		return nil, p.notAChoice(entry)
	}
	return nil, fmt.Sprintf("unsupported property kind %q", p.Kind)
}

// convertPicks maps the picked labels of a multi-select to unique values in
// schema order.
func (p *Property) convertPicks(entries []string) (any, string) {
	ix := p.index()
	picked := make([]bool, len(p.Choices))
	count := 0
	for _, entry := range entries {
		i, ok := ix.match(entry)
		if !ok {
			return nil, p.notAChoice(entry)
		}
		if !picked[i] {
			picked[i] = true
			count++
		}
	}
	if problem := p.itemsProblem(count); problem != "" {
		return nil, problem
	}
	return pickedValues(p.Choices, picked), ""
}

// listedChoices bounds how many labels an error message lists.
const listedChoices = 10

func (p *Property) notAChoice(entry string) string {
	labels := make([]string, 0, listedChoices+1)
	for i, c := range p.Choices {
		if i == listedChoices {
			labels = append(labels, "…")
			break
		}
		labels = append(labels, quote(c.Label))
	}
	return quote(entry) + " is not one of the options: " + strings.Join(labels, ", ")
}

// answerCountProblem says how the number of answers is wrong, in words an
// operator reads without tripping over "1 answers".
func answerCountProblem(got, want int) string {
	plural := func(n int, word string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, word)
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	return fmt.Sprintf("expected one answer per question: got %s for %s", plural(got, "answer"), plural(want, "question"))
}
