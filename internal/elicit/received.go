package elicit

import (
	"fmt"
	"strconv"
	"strings"
)

// Filled is what the schema's defaults gave the agent for the answers the
// operator left blank (answers[i] answers Questions[i]), as the operator
// reads it: the labels of the choices, Yes or No, the number or the text.
// Filled[i] is nil where the operator answered; Filled is nil when no
// default filled anything. A history shows it, so that such an answer reads
// as what the agent got, not as no answer.
func (f *Form) Filled(answers [][]string, content Content) [][]string {
	if f == nil || f.Schema == nil {
		return nil
	}
	var filled [][]string
	for i := range f.Schema.Properties {
		if i >= len(answers) || !blank(answers[i]) {
			continue
		}
		p := &f.Schema.Properties[i]
		v, ok := content[p.Key]
		if !ok {
			continue
		}
		if filled == nil {
			filled = make([][]string, len(answers))
		}
		filled[i] = p.shown(v)
	}
	return filled
}

// blank says an answer has nothing in it: how an operator leaves a
// question unanswered (see nonBlank).
func blank(answer []string) bool {
	for _, s := range answer {
		if strings.TrimSpace(s) != "" {
			return false
		}
	}
	return true
}

// shown is value as the operator would have answered it.
func (p *Property) shown(value any) []string {
	switch v := value.(type) {
	case bool:
		if v {
			return []string{yesLabel}
		}
		return []string{noLabel}
	case string:
		return []string{p.label(v)}
	case []string:
		labels := make([]string, len(v))
		for i, s := range v {
			labels[i] = p.label(s)
		}
		return labels
	case []any:
		labels := make([]string, len(v))
		for i, s := range v {
			labels[i] = p.label(fmt.Sprint(s))
		}
		return labels
	case float64:
		return []string{strconv.FormatFloat(v, 'f', -1, 64)}
	case int64:
		return []string{strconv.FormatInt(v, 10)}
	}
	return []string{fmt.Sprint(value)}
}

// label is the label of the choice whose value is value, or value itself.
func (p *Property) label(value string) string {
	for _, c := range p.Choices {
		if c.Value == value {
			return c.Label
		}
	}
	return value
}
