package elicit

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The labels of the two options of a boolean question.
const (
	yesLabel = "Yes"
	noLabel  = "No"
)

// QuestionOption is OpenCode's QuestionOption.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// QuestionInfo is OpenCode's QuestionInfo; field order and omitempty match the
// wire format recorded from a real OpenCode server.
type QuestionInfo struct {
	Question string           `json:"question"`
	Header   string           `json:"header"`
	Options  []QuestionOption `json:"options"` // never nil
	Multiple *bool            `json:"multiple,omitempty"`
	Custom   *bool            `json:"custom,omitempty"`
}

// Form is an elicitation turned into OpenCode questions: Questions[i] asks for
// Schema.Properties[i].
type Form struct {
	Message   string
	Schema    *Schema
	Questions []QuestionInfo
}

// NewForm parses requestedSchema and builds one question per property. It is
// deterministic: the same inputs always give the same questions, so a stored
// elicitation can be rebuilt from its message and raw schema.
func NewForm(message string, requestedSchema json.RawMessage, opts Options) (*Form, error) {
	schema, err := ParseSchema(requestedSchema, opts)
	if err != nil {
		return nil, err
	}
	form := &Form{Message: message, Schema: schema, Questions: make([]QuestionInfo, len(schema.Properties))}
	for i := range schema.Properties {
		form.Questions[i] = buildQuestion(&schema.Properties[i], opts.headerLimit())
	}
	if strings.TrimSpace(message) != "" {
		// OpenCode has no place for a form-level message, and the operator
		// must see what the agent asked: it leads the first question.
		form.Questions[0].Question = Shown(message) + "\n\n" + form.Questions[0].Question
	}
	return form, nil
}

func buildQuestion(p *Property, headerLimit int) QuestionInfo {
	q := QuestionInfo{
		Question: questionText(p),
		Header:   header(p, headerLimit),
		Options:  []QuestionOption{},
	}
	switch p.Kind {
	case KindBoolean:
		q.Options = booleanOptions(p)
		q.Custom = new(false)
	case KindSingleEnum:
		q.Options = choiceOptions(p)
		q.Custom = new(false)
	case KindMultiSelect:
		q.Options = choiceOptions(p)
		q.Multiple = new(true)
		q.Custom = new(false)
	}
	return q
}

// header is the title (or key) on one line, cut to limit runes.
func header(p *Property, limit int) string {
	h := strings.Join(strings.Fields(p.Title), " ")
	if h == "" {
		h = strings.Join(strings.Fields(p.Key), " ")
	}
	if h == "" {
		h = strconv.Quote(p.Key)
	}
	return cutRunes(Shown(h), limit)
}

// cutRunes shortens s to at most limit runes, marking the cut with "…".
func cutRunes(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	return string([]rune(s)[:limit-1]) + "…"
}

// questionText is the description (or title, or key) followed by what the
// operator may answer, the default, and a required marker.
func questionText(p *Property) string {
	text := p.Key
	for _, s := range []string{p.Description, p.Title} {
		if strings.TrimSpace(s) != "" {
			text = s
			break
		}
	}
	notes := answerHints(p)
	if p.Default != nil {
		notes = append(notes, "default: "+showDefault(p))
	}
	if len(notes) > 0 {
		text += " (" + strings.Join(notes, "; ") + ")"
	}
	if p.Required {
		text += " (required)"
	}
	return Shown(text)
}

// answerHints tells the operator the expected form of the answer.
func answerHints(p *Property) []string {
	switch p.Kind {
	case KindString:
		return textHints(p)
	case KindNumber, KindInteger:
		return []string{numberHint(p)}
	case KindBoolean:
		return []string{"Yes or No"}
	case KindSingleEnum:
		return []string{"pick one"}
	case KindMultiSelect:
		return []string{"pick " + countHint(p.MinItems, p.MaxItems, "", "any number")}
	}
	return nil
}

var formatHints = map[string]string{
	"email":     "email address",
	"uri":       "absolute URI, e.g. https://example.com",
	"date":      "date YYYY-MM-DD",
	"date-time": "date-time, RFC 3339, e.g. 2026-01-31T09:30:00Z",
}

func textHints(p *Property) []string {
	hints := []string{"text"}
	if p.Format != "" {
		hints[0] = formatHints[p.Format]
	}
	if length := countHint(p.MinLength, p.MaxLength, "character", ""); length != "" {
		hints = append(hints, length)
	}
	if p.Pattern != "" {
		hints = append(hints, "matching the pattern `"+p.Pattern+"`")
	}
	return hints
}

// countHint describes a range of counts of unit ("1–40 characters",
// "at least 1 character"); a bare number when unit is "", and
// whenUnbounded when there are no bounds worth telling.
func countHint(lo, hi *int, unit, whenUnbounded string) string {
	count := func(n int) string {
		if unit == "" {
			return strconv.Itoa(n)
		}
		return plural(n, unit)
	}
	switch {
	case lo != nil && hi != nil && *lo == *hi:
		return "exactly " + count(*lo)
	case lo != nil && *lo > 0 && hi != nil:
		return strconv.Itoa(*lo) + "–" + count(*hi)
	case hi != nil:
		return "at most " + count(*hi)
	case lo != nil && *lo > 0:
		return "at least " + count(*lo)
	}
	return whenUnbounded
}

func numberHint(p *Property) string {
	noun := "number"
	lo, hi := p.Minimum, p.Maximum
	if p.Kind == KindInteger {
		noun = "integer"
		// Only whole numbers are allowed, so show the whole bounds.
		if lo != nil {
			lo = new(math.Ceil(*lo))
		}
		if hi != nil {
			hi = new(math.Floor(*hi))
		}
	}
	switch {
	case lo != nil && hi != nil:
		return noun + " between " + formatNumber(*lo) + " and " + formatNumber(*hi)
	case lo != nil:
		return noun + ", at least " + formatNumber(*lo)
	case hi != nil:
		return noun + ", at most " + formatNumber(*hi)
	}
	return noun
}

// showDefault renders the default the way the operator would enter it.
func showDefault(p *Property) string {
	switch d := p.Default.(type) {
	case string:
		if p.Kind == KindSingleEnum {
			return p.Choices[p.index().byValue[d]].Label
		}
		return quote(d)
	case float64:
		return formatNumber(d)
	case int64:
		return strconv.FormatInt(d, 10)
	case bool:
		if d {
			return yesLabel
		}
		return noLabel
	case []string:
		if len(d) == 0 {
			return "none"
		}
		labels := make([]string, len(d))
		for i, v := range d {
			labels[i] = p.Choices[p.index().byValue[v]].Label
		}
		return strings.Join(labels, ", ")
	}
	return ""
}

func booleanOptions(p *Property) []QuestionOption {
	opts := []QuestionOption{{Label: yesLabel}, {Label: noLabel}}
	if d, ok := p.Default.(bool); ok {
		if d {
			opts[0].Description = "(default)"
		} else {
			opts[1].Description = "(default)"
		}
	}
	return opts
}

// choiceOptions shows each choice by its label; the description carries the
// underlying value when it differs, and marks the default(s).
func choiceOptions(p *Property) []QuestionOption {
	defaults := map[string]bool{}
	switch d := p.Default.(type) {
	case string:
		defaults[d] = true
	case []string:
		for _, v := range d {
			defaults[v] = true
		}
	}
	opts := make([]QuestionOption, len(p.Choices))
	for i, c := range p.Choices {
		var notes []string
		if value := Shown(c.Value); value != c.Label {
			notes = append(notes, value)
		}
		if defaults[c.Value] {
			notes = append(notes, "(default)")
		}
		opts[i] = QuestionOption{Label: c.Label, Description: Shown(strings.Join(notes, " "))}
	}
	return opts
}

// index returns the lookup built by ParseSchema, or builds one for a
// hand-made Property (never cached, so a Form stays safe to share).
func (p *Property) index() *choiceIndex {
	if p.choices != nil {
		return p.choices
	}
	return newChoiceIndex(p.Choices)
}
