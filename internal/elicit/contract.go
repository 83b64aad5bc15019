package elicit

// CONTRACT FILE — the exported API that the rest of questiond codes against.
// The implementation replaces the stub bodies below (and may move these
// declarations into files grouped by what they do); the names, signatures and
// documented behaviour stay.

import "encoding/json"

// Defaults for Options.
const (
	DefaultMaxProperties = 50 // hard limit: more properties is an error
	SoftPropertyLimit    = 10 // the RFC's soft limit: callers may log a warning above it
	DefaultHeaderLimit   = 30 // runes; OpenCode TUIs before 1.1.26 need 12
)

// Options tune parsing and question building. The zero value means the defaults.
type Options struct {
	MaxProperties int // 0 means DefaultMaxProperties
	HeaderLimit   int // 0 means DefaultHeaderLimit
}

// Kind classifies a property of a requested schema.
type Kind string

// The property kinds of the MCP elicitation subset.
const (
	KindString      Kind = "string"
	KindNumber      Kind = "number"
	KindInteger     Kind = "integer"
	KindBoolean     Kind = "boolean"
	KindSingleEnum  Kind = "enum"     // enum, enum+enumNames, oneOf[{const,title}]
	KindMultiSelect Kind = "multiple" // type array with items.enum / items.anyOf / items.oneOf
)

// Choice is one allowed value of an enum property: Value is what the agent
// gets back (the enum value or const), Label what the operator sees (the
// title, enumNames entry, or the value itself).
type Choice struct {
	Value string
	Label string
}

// Property is one classified property of a requested schema.
type Property struct {
	Key         string
	Kind        Kind
	Title       string
	Description string
	Required    bool
	Format      string // email, uri, date, date-time or ""
	MinLength   *int
	MaxLength   *int
	Minimum     *float64
	Maximum     *float64
	MinItems    *int
	MaxItems    *int
	Choices     []Choice // enums and multi-selects, in schema order
	// Default is nil when the schema has none; otherwise a string, float64
	// (number), int64 (integer), bool or []string (multi-select), already
	// checked against the property's own rules.
	Default any
}

// Schema is a requestedSchema that passed every rule of the MCP subset.
type Schema struct {
	Properties []Property // in document order
}

// SchemaError says which part of a requestedSchema broke which rule.
// Error() is "<Path>: <Rule>", e.g.
// "requestedSchema.properties.address: nested objects are not allowed in elicitation schemas".
type SchemaError struct {
	Path string
	Rule string
}

func (e *SchemaError) Error() string { return e.Path + ": " + e.Rule }

// ParseSchema checks raw (the JSON of a requestedSchema) against the MCP
// elicitation subset and classifies its properties in document order. Every
// failure is a *SchemaError.
func ParseSchema(raw json.RawMessage, opts Options) (*Schema, error) { panic("unimplemented") }

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
	panic("unimplemented")
}

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

func (e *AnswerError) Error() string { panic("unimplemented") }

// Convert turns an OpenCode reply (answers[i] answers Questions[i]) into typed
// content that satisfies the schema. Every failure is an *AnswerError.
func (f *Form) Convert(answers [][]string) (Content, error) { panic("unimplemented") }
