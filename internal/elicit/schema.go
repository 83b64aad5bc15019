package elicit

import (
	"encoding/json"
	"regexp"
)

// Defaults for Options.
const (
	DefaultMaxProperties = 50 // hard limit: more properties is an error
	SoftPropertyLimit    = 10 // the RFC's soft limit: callers may log a warning above it
	DefaultHeaderLimit   = 30 // runes; OpenCode TUIs before 1.1.26 need 12
	// DefaultMaxOptions bounds the choices of one enum or multi-select. The
	// longest lists real forms offer are pickers of time zones (about 600
	// IANA names) and countries (249); a thousand leaves room for those and
	// stops a schema whose options alone would flood every operator's screen.
	DefaultMaxOptions = 1000
)

// Options tune parsing and question building. The zero value means the
// defaults; so does a negative value.
type Options struct {
	MaxProperties int // 0 means DefaultMaxProperties
	HeaderLimit   int // 0 means DefaultHeaderLimit
	MaxOptions    int // choices of one property; 0 means DefaultMaxOptions
}

func (o Options) maxOptions() int {
	if o.MaxOptions <= 0 {
		return DefaultMaxOptions
	}
	return o.MaxOptions
}

func (o Options) maxProperties() int {
	if o.MaxProperties <= 0 {
		return DefaultMaxProperties
	}
	return o.MaxProperties
}

func (o Options) headerLimit() int {
	if o.HeaderLimit <= 0 {
		return DefaultHeaderLimit
	}
	return o.HeaderLimit
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
	Pattern     string // a Go (RE2) regular expression, or ""
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

	// Filled by ParseSchema; a hand-built Property works without them, only
	// slower.
	pattern *regexp.Regexp
	choices *choiceIndex
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
func ParseSchema(raw json.RawMessage, opts Options) (*Schema, error) {
	root, err := decodeOrdered(raw)
	if err != nil {
		return nil, err
	}
	return parseRoot(root, opts)
}

// rootKeywords are the keys a requestedSchema may have besides "x-*"
// extensions.
var rootKeywords = map[string]bool{
	"type": true, "properties": true, "required": true,
	"$schema": true, "title": true, "description": true, "$comment": true,
	"additionalProperties": true,
}

// knownDialects are the "$schema" values the MCP SDKs can validate against.
var knownDialects = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema": true,
	"http://json-schema.org/draft-07/schema#":      true,
	"https://json-schema.org/draft-07/schema#":     true,
}

func parseRoot(root *jsonValue, opts Options) (*Schema, error) {
	var at jsonPath
	if root.typ != jsonObject {
		return nil, at.errorf("must be a JSON object, got %s", root.typ)
	}
	if err := checkRootKeywords(root, at); err != nil {
		return nil, err
	}
	props, err := rootProperties(root, at, opts.maxProperties())
	if err != nil {
		return nil, err
	}
	required, err := requiredSet(root.get("required"), props, at.key("required"))
	if err != nil {
		return nil, err
	}
	schema := &Schema{Properties: make([]Property, 0, len(props.members))}
	keys := make(map[string]string, len(props.members)) // sameToOperators key → property key
	for _, m := range props.members {
		if first, ok := keys[sameToOperators(m.key)]; ok {
			// A header shows the key when there is no title, and the
			// content an agent reads is keyed by it.
			return nil, at.key("properties").key(m.key).errorf("duplicate property key %s", lookalike(m.key, first))
		}
		keys[sameToOperators(m.key)] = m.key
		p, err := parseProperty(m.key, m.value, required[m.key], at.key("properties").key(m.key))
		if err != nil {
			return nil, err
		}
		if max := opts.maxOptions(); len(p.Choices) > max {
			return nil, at.key("properties").key(m.key).errorf("offers %d options; the limit is %d", len(p.Choices), max)
		}
		schema.Properties = append(schema.Properties, p)
	}
	return schema, nil
}

func checkRootKeywords(root *jsonValue, at jsonPath) error {
	for _, m := range root.members {
		if !rootKeywords[m.key] && !isExtensionKey(m.key) {
			return at.errorf("keyword %q is not allowed in elicitation schemas", m.key)
		}
	}
	typ := root.get("type")
	switch {
	case typ == nil:
		return at.errorf(`missing "type": "object"`)
	case typ.typ != jsonString || typ.text != "object":
		return at.key("type").errorf(`must be "object", got %s`, describe(typ))
	}
	for _, key := range []string{"$schema", "title", "description", "$comment"} {
		if v := root.get(key); v != nil && v.typ != jsonString {
			return at.key(key).errorf("must be a string, got %s", v.typ)
		}
	}
	if v := root.get("$schema"); v != nil && !knownDialects[v.text] {
		// jsonschema-go, which the MCP Go SDK validates content with,
		// refuses to validate against any other dialect, so every answer
		// would bounce.
		return at.key("$schema").errorf("unsupported dialect %s (use %s or %s)",
			quote(v.text), "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#")
	}
	if v := root.get("additionalProperties"); v != nil && (v.typ != jsonBool || v.boolean) {
		return at.key("additionalProperties").errorf("only false is allowed (content never carries undeclared keys)")
	}
	return nil
}

func rootProperties(root *jsonValue, at jsonPath, limit int) (*jsonValue, error) {
	props := root.get("properties")
	if props == nil {
		return nil, at.errorf(`missing "properties"`)
	}
	at = at.key("properties")
	switch {
	case props.typ != jsonObject:
		return nil, at.errorf("must be an object, got %s", props.typ)
	case len(props.members) == 0:
		return nil, at.errorf("must declare at least one property")
	case len(props.members) > limit:
		return nil, at.errorf("declares %d properties; the limit is %d", len(props.members), limit)
	}
	for _, m := range props.members {
		if m.key == "" {
			return nil, at.errorf("property names must not be empty")
		}
	}
	return props, nil
}

// requiredSet checks the root "required" list: property names that exist,
// each named once.
func requiredSet(v *jsonValue, props *jsonValue, at jsonPath) (map[string]bool, error) {
	set := map[string]bool{}
	if v == nil {
		return set, nil
	}
	if v.typ != jsonArray {
		return nil, at.errorf("must be an array of property names, got %s", v.typ)
	}
	for i, item := range v.items {
		switch {
		case item.typ != jsonString:
			return nil, at.index(i).errorf("must be a property name (a string), got %s", item.typ)
		case props.get(item.text) == nil:
			return nil, at.index(i).errorf("%s is not a declared property", quote(item.text))
		case set[item.text]:
			return nil, at.index(i).errorf("%s is listed twice", quote(item.text))
		}
		set[item.text] = true
	}
	return set, nil
}
