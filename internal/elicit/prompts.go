package elicit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Prompt is one question in the shape of OpenCode's question tool: a question,
// a short header, options (none for a free-text question) and whether several
// options may be picked.
type Prompt struct {
	Question string         `json:"question"`
	Header   string         `json:"header,omitempty"`
	Options  []PromptOption `json:"options,omitempty"`
	Multiple bool           `json:"multiple,omitempty"`
}

// PromptOption is one choice of a Prompt; the description is optional.
type PromptOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// PromptKey is the requestedSchema property that asks prompts[i]: "q1", "q2", …
func PromptKey(i int) string { return "q" + strconv.Itoa(i+1) }

// PromptError is a prompt list that cannot be asked; Path names the field in
// the tool's input, e.g. questions[1].options[0].label.
type PromptError struct {
	Path    string
	Problem string
}

func (e *PromptError) Error() string { return e.Path + ": " + e.Problem }

// FromPrompts turns OpenCode-style prompts into an elicitation: its parsed
// form (whose Message is the elicitation's message: NewForm of that message
// and the schema gives the same form), a requestedSchema with one optional property per prompt (PromptKey order;
// options become titled choices whose values are their labels, free-text
// prompts plain strings), and the questions operators see, which show the
// prompts as written — option descriptions included. An empty answer leaves
// its property out of the content, as OpenCode's "Unanswered".
func FromPrompts(prompts []Prompt, opts Options) (form *Form, schema json.RawMessage, questions []QuestionInfo, err error) {
	if len(prompts) == 0 {
		return nil, nil, nil, &PromptError{"questions", "at least one question is needed"}
	}
	if max := opts.maxProperties(); len(prompts) > max {
		return nil, nil, nil, &PromptError{"questions", fmt.Sprintf("at most %d questions can be asked at once, got %d", max, len(prompts))}
	}
	type choice struct {
		Const string `json:"const"`
		Title string `json:"title"`
	}
	type property struct {
		Type        string    `json:"type"`
		Title       string    `json:"title,omitempty"`
		Description string    `json:"description"`
		OneOf       []choice  `json:"oneOf,omitempty"`
		Items       *struct { // multi-select
			AnyOf []choice `json:"anyOf"`
		} `json:"items,omitempty"`
	}
	var props strings.Builder
	props.WriteString(`{"type":"object","properties":{`)
	questions = make([]QuestionInfo, len(prompts))
	for i, p := range prompts {
		at := fmt.Sprintf("questions[%d]", i)
		text := strings.TrimSpace(p.Question)
		if text == "" {
			return nil, nil, nil, &PromptError{at + ".question", "must not be empty"}
		}
		if max := opts.maxOptions(); len(p.Options) > max {
			return nil, nil, nil, &PromptError{at + ".options", fmt.Sprintf("at most %d options can be offered, got %d", max, len(p.Options))}
		}
		if len(p.Options) == 0 && p.Multiple {
			return nil, nil, nil, &PromptError{at + ".multiple", "a free-text question (no options) cannot take several picks"}
		}
		prop := property{Type: "string", Title: strings.TrimSpace(p.Header), Description: text}
		if prop.Title == "" {
			prop.Title = text // cut to the header limit like any title
		}
		q := QuestionInfo{Question: Shown(text), Options: []QuestionOption{}}
		seen := make(map[string]string, len(p.Options))   // sameToOperators of a shown label → the shown label
		values := make(map[string]string, len(p.Options)) // sameToOperators of a label as written (its value) → that label
		choices := make([]choice, len(p.Options))
		for j, o := range p.Options {
			label := strings.TrimSpace(o.Label)
			switch {
			case label == "":
				return nil, nil, nil, &PromptError{fmt.Sprintf("%s.options[%d].label", at, j), "must not be empty"}
			case hasControl(label):
				return nil, nil, nil, &PromptError{fmt.Sprintf("%s.options[%d].label", at, j), "must not contain control characters"}
			}
			if first, ok := seen[sameToOperators(Shown(label))]; ok {
				return nil, nil, nil, &PromptError{fmt.Sprintf("%s.options[%d].label", at, j), duplicateLabel(label, first)}
			}
			// The label as written is the option's value, which NewForm
			// checks the same way (checkChoices): two that differ only in
			// invisible characters are one answer to operators.
			if first, ok := values[sameToOperators(label)]; ok {
				return nil, nil, nil, &PromptError{fmt.Sprintf("%s.options[%d].label", at, j), duplicateLabel(label, first)}
			}
			seen[sameToOperators(Shown(label))] = Shown(label)
			values[sameToOperators(label)] = label
			// The value stays the label as written, so the agent gets back
			// what it sent; operators see and answer the shown label.
			choices[j] = choice{Const: label, Title: label}
			q.Options = append(q.Options, QuestionOption{Label: Shown(label), Description: Shown(strings.TrimSpace(o.Description))})
		}
		switch {
		case len(choices) > 0 && p.Multiple:
			prop.Type = "array"
			prop.Items = &struct {
				AnyOf []choice `json:"anyOf"`
			}{choices}
			q.Multiple, q.Custom = new(true), new(false)
		case len(choices) > 0:
			prop.OneOf = choices
			q.Custom = new(false)
		}
		raw, err := json.Marshal(prop)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", at, err)
		}
		if i > 0 {
			props.WriteByte(',')
		}
		fmt.Fprintf(&props, "%q:%s", PromptKey(i), raw)
		questions[i] = q
	}
	props.WriteString("}}")
	message := strings.TrimSpace(prompts[0].Question)
	if len(prompts) > 1 {
		message = fmt.Sprintf("%d questions: %s", len(prompts), message)
	}
	schema = json.RawMessage(props.String())
	if form, err = NewForm(message, schema, opts); err != nil {
		return nil, nil, nil, err
	}
	for i := range questions {
		questions[i].Header = form.Questions[i].Header
	}
	return form, schema, questions, nil
}

// PromptAnswers reads content converted from a FromPrompts schema back into
// one answer list per prompt, the shape of OpenCode's answers: the picked
// labels, the free text, or nothing for an unanswered prompt.
func PromptAnswers(content Content, n int) [][]string {
	answers := make([][]string, n)
	for i := range answers {
		switch v := content[PromptKey(i)].(type) {
		case string:
			answers[i] = []string{v}
		case []string:
			answers[i] = v
		default:
			answers[i] = []string{}
		}
	}
	return answers
}

// duplicateLabel says that label repeats first, another option's label, as
// operators see it.
func duplicateLabel(label, first string) string {
	return lookalike(label, first) + " is already an option of this question"
}
