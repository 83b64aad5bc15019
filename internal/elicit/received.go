package elicit

import (
	"fmt"
	"strconv"
)

// Received is what the agent received for each question, as the operator
// reads it: the labels of the choices it got, Yes or No, the number or the
// text; nil for a property its content leaves out. A history shows it, so
// that an answer the schema's default filled in shows as what the agent
// got, not as no answer.
func (f *Form) Received(content Content) [][]string {
	if f == nil || f.Schema == nil {
		return nil
	}
	out := make([][]string, len(f.Schema.Properties))
	for i := range f.Schema.Properties {
		p := &f.Schema.Properties[i]
		if v, ok := content[p.Key]; ok {
			out[i] = p.shown(v)
		}
	}
	return out
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
