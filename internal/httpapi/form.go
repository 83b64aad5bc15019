package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
)

// questionForm is what GET /questiond/question/{requestID}/form answers: the
// expected form of every answer, which OpenCode's QuestionInfo cannot carry
// (kinds, bounds, formats, defaults, required marks), for the /ui page.
// fields[i] is answered by answers[i] of POST /question/{id}/reply.
type questionForm struct {
	ID        string      `json:"id"`
	SessionID string      `json:"sessionID"`
	Directory string      `json:"directory"`
	Agent     string      `json:"agent,omitempty"`
	Client    string      `json:"client,omitempty"`
	CreatedAt time.Time   `json:"createdAt"`
	Deadline  time.Time   `json:"deadline,omitzero"`
	Message   string      `json:"message"`
	Fields    []formField `json:"fields"`
}

// formField is one property of the requested schema. Options are answered by
// their label; every other kind by one text entry.
type formField struct {
	Key         string       `json:"key"`
	Kind        string       `json:"kind"`
	Header      string       `json:"header"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Required    bool         `json:"required"`
	Default     any          `json:"default,omitempty"`
	Options     []formOption `json:"options,omitempty"`
	MinItems    *int         `json:"minItems,omitempty"`
	MaxItems    *int         `json:"maxItems,omitempty"`
	Format      string       `json:"format,omitempty"`
	MinLength   *int         `json:"minLength,omitempty"`
	MaxLength   *int         `json:"maxLength,omitempty"`
	Pattern     string       `json:"pattern,omitempty"`
	Examples    []string     `json:"examples,omitempty"`
	Minimum     *float64     `json:"minimum,omitempty"`
	Maximum     *float64     `json:"maximum,omitempty"`
}

// formOption is one choice: Value is what the agent gets, Label what the
// operator sees and answers with.
type formOption struct {
	Value       string `json:"value"`
	Label       string `json:"label"`
	Description string `json:"description"`
}

// Field kinds as the page names them.
var fieldKinds = map[elicit.Kind]string{
	elicit.KindSingleEnum:  "single",
	elicit.KindMultiSelect: "multi",
	elicit.KindBoolean:     "boolean",
	elicit.KindString:      "text",
	elicit.KindNumber:      "number",
	elicit.KindInteger:     "integer",
}

// handleQuestionForm serves GET /questiond/question/{requestID}/form: a
// pending question of the caller's directory scope with the expected form of
// its answers; any other id is the 404 of an unknown question.
func (s *Server) handleQuestionForm(w http.ResponseWriter, r *http.Request) {
	id, err := questionID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := s.pendingQuestion(r, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	form, err := s.questions.Form(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wire.WriteJSON(w, http.StatusOK, toQuestionForm(q, form))
}

func toQuestionForm(q *pending.Question, form *elicit.Form) questionForm {
	out := questionForm{
		ID: q.ID, SessionID: q.SessionID, Directory: q.Directory, Agent: q.Owner, Client: elicit.Shown(q.Client),
		CreatedAt: q.CreatedAt, Deadline: q.Deadline, Message: elicit.Shown(form.Message),
		Fields: make([]formField, len(form.Schema.Properties)),
	}
	// The questions as operators see them (GET /question, the TUI) are the
	// stored ones: a question tool's options have descriptions its schema
	// cannot carry, so the form's own would lose them.
	shown := form.Questions
	if len(q.Questions) == len(form.Schema.Properties) {
		shown = q.Questions
	}
	examples := examplesOf(q.Schema)
	for i := range form.Schema.Properties {
		p := &form.Schema.Properties[i]
		out.Fields[i] = toFormField(p, shown[i])
		out.Fields[i].Examples = examples[p.Key]
	}
	return out
}

// Examples are shown to a person in place of a pattern nobody reads: a few,
// each one short line.
const (
	maxExamples     = 3
	exampleMaxRunes = 40
)

// examplesOf reads the examples of each property of the requested schema
// (JSON Schema's "examples"), which the parsed form does not keep: strings
// and numbers, as operators are shown agents' text.
func examplesOf(schema json.RawMessage) map[string][]string {
	var s struct {
		Properties map[string]struct {
			Examples []any `json:"examples"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := map[string][]string{}
	for key, p := range s.Properties {
		for _, e := range p.Examples {
			var text string
			switch v := e.(type) {
			case string:
				text = wire.OneLine(v, exampleMaxRunes)
			case float64:
				text = strconv.FormatFloat(v, 'f', -1, 64)
			}
			if text != "" && len(out[key]) < maxExamples {
				out[key] = append(out[key], text)
			}
		}
	}
	return out
}

func toFormField(p *elicit.Property, shown elicit.QuestionInfo) formField {
	f := formField{
		Key: p.Key, Kind: fieldKinds[p.Kind], Header: shown.Header, Title: elicit.Shown(p.Title), Description: elicit.Shown(p.Description),
		Required: p.Required, Default: p.Default, MinItems: p.MinItems, MaxItems: p.MaxItems,
		Format: p.Format, MinLength: p.MinLength, MaxLength: p.MaxLength, Pattern: p.Pattern,
		Minimum: p.Minimum, Maximum: p.Maximum,
	}
	switch p.Kind {
	case elicit.KindBoolean:
		// The question's options are Yes then No; their descriptions mark
		// the default.
		f.Options = make([]formOption, len(shown.Options))
		for i, o := range shown.Options {
			f.Options[i] = formOption{Value: boolValue(o.Label), Label: o.Label, Description: o.Description}
		}
	case elicit.KindSingleEnum, elicit.KindMultiSelect:
		f.Options = make([]formOption, len(p.Choices))
		for i, c := range p.Choices {
			f.Options[i] = formOption{Value: c.Value, Label: c.Label}
			if i < len(shown.Options) {
				f.Options[i].Description = shown.Options[i].Description
			}
		}
	}
	return f
}

func boolValue(label string) string {
	if label == "Yes" {
		return "true"
	}
	return "false"
}
