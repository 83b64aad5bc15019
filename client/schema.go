package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SchemaBuilder builds a requestedSchema inside the MCP elicitation subset,
// after mocapi's ADR-0015 ("constrained elicitation schema builder; no escape
// hatch"): a flat object of strings, numbers, integers, booleans and single-
// or multi-select enums. No method takes raw JSON Schema, and every option
// is typed to the kinds it applies to, so most misuse does not compile; the
// rest (a duplicate key, a default outside the choices, min > max, …) is
// reported by Build, naming the property.
//
// Properties appear in call order, and every property is required unless
// given Optional().
type SchemaBuilder struct {
	props []*property
}

// NewSchema starts an empty schema.
func NewSchema() *SchemaBuilder { return &SchemaBuilder{} }

// Choice is one option of a titled choice: Value goes into the result,
// Title is what the operator sees.
type Choice struct{ Value, Title string }

// ChoicesOf lists Go string constants as titled choices: the title is the
// value's String() when its type has one (display names), else the value.
func ChoicesOf[T ~string](values ...T) []Choice {
	out := make([]Choice, len(values))
	for i, v := range values {
		title := string(v)
		if s, ok := any(v).(fmt.Stringer); ok {
			title = s.String()
		}
		out[i] = Choice{Value: string(v), Title: title}
	}
	return out
}

// kind is what a property holds.
type kind int

const (
	kindString kind = iota
	kindInteger
	kindNumber
	kindBool
	kindChoice       // string + enum
	kindChoiceTitled // string + oneOf [{const,title}]
	kindMany         // array + items {type string, enum}
	kindManyTitled   // array + items.anyOf [{const,title}]
)

// property is one property as the options left it; Build checks and renders it.
type property struct {
	name     string
	kind     kind
	optional bool

	title, description *string
	// strings
	minLength, maxLength *int
	format               string
	defaultString        *string
	// numbers and integers
	minimum, maximum, defaultNumber *float64
	// booleans
	defaultBool *bool
	// choices
	choices        []Choice
	defaultChoice  *string
	minItems       *int
	maxItems       *int
	defaultChoices []string // nil: none

	problems []string // misuse found while applying options
}

func (p *property) problem(format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

// String adds a free-text property.
func (b *SchemaBuilder) String(name string, opts ...StringOption) *SchemaBuilder {
	return addProperty(b, name, kindString, nil, opts, StringOption.applyString)
}

// Integer adds a whole-number property.
func (b *SchemaBuilder) Integer(name string, opts ...NumberOption) *SchemaBuilder {
	return addProperty(b, name, kindInteger, nil, opts, NumberOption.applyNumber)
}

// Number adds a number property.
func (b *SchemaBuilder) Number(name string, opts ...NumberOption) *SchemaBuilder {
	return addProperty(b, name, kindNumber, nil, opts, NumberOption.applyNumber)
}

// Bool adds a yes/no property.
func (b *SchemaBuilder) Bool(name string, opts ...BoolOption) *SchemaBuilder {
	return addProperty(b, name, kindBool, nil, opts, BoolOption.applyBool)
}

// Choose adds a single choice among values, which the operator sees as
// they are (a plain enum).
func (b *SchemaBuilder) Choose(name string, values []string, opts ...ChoiceOption) *SchemaBuilder {
	return addProperty(b, name, kindChoice, plainChoices(values), opts, ChoiceOption.applyChoice)
}

// ChooseTitled adds a single choice whose options show titles (oneOf
// const/title); the result holds the chosen Value.
func (b *SchemaBuilder) ChooseTitled(name string, choices []Choice, opts ...ChoiceOption) *SchemaBuilder {
	return addProperty(b, name, kindChoiceTitled, slices.Clone(choices), opts, ChoiceOption.applyChoice)
}

// ChooseMany adds a multi-select among values (array of items.enum); the
// result is the list of picks.
func (b *SchemaBuilder) ChooseMany(name string, values []string, opts ...ManyOption) *SchemaBuilder {
	return addProperty(b, name, kindMany, plainChoices(values), opts, ManyOption.applyMany)
}

// ChooseManyTitled adds a multi-select whose options show titles (array of
// items.anyOf const/title); the result lists the picked Values.
func (b *SchemaBuilder) ChooseManyTitled(name string, choices []Choice, opts ...ManyOption) *SchemaBuilder {
	return addProperty(b, name, kindManyTitled, slices.Clone(choices), opts, ManyOption.applyMany)
}

// addProperty adds property name of kind k with its choices (nil for a kind
// without), applies opts to it and returns b.
func addProperty[O any](b *SchemaBuilder, name string, k kind, choices []Choice, opts []O, apply func(O, *property)) *SchemaBuilder {
	p := b.add(name, k)
	p.choices = choices
	applyOptions(p, opts, apply)
	return b
}

// applyOptions applies opts to p in order; a nil option is a problem Build
// reports, not a panic.
func applyOptions[O any](p *property, opts []O, apply func(O, *property)) {
	for i, o := range opts {
		if any(o) == nil {
			p.problem("option %d is nil", i+1)
			continue
		}
		apply(o, p)
	}
}

func (b *SchemaBuilder) add(name string, k kind) *property {
	p := &property{name: name, kind: k}
	b.props = append(b.props, p)
	return p
}

func plainChoices(values []string) []Choice {
	out := make([]Choice, len(values))
	for i, v := range values {
		out[i] = Choice{Value: v, Title: v}
	}
	return out
}

// Build checks every property and returns the requestedSchema. Every misuse
// is reported, each naming its property, joined into one error.
func (b *SchemaBuilder) Build() (json.RawMessage, error) {
	var errs []error
	if len(b.props) == 0 {
		errs = append(errs, errors.New("schema: no properties (an elicitation asks at least one question)"))
	}
	seen := make(map[string]bool, len(b.props))
	for i, p := range b.props {
		label := fmt.Sprintf("schema: property %q", p.name)
		if p.name == "" {
			label = fmt.Sprintf("schema: property %d", i+1)
			errs = append(errs, fmt.Errorf("%s: empty name", label))
		} else if seen[p.name] {
			errs = append(errs, fmt.Errorf("%s: duplicate name (each property is added once)", label))
		}
		seen[p.name] = true
		for _, problem := range append(p.problems, p.check()...) {
			errs = append(errs, fmt.Errorf("%s: %s", label, problem))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	props := make(object, 0, len(b.props))
	var required []string
	for _, p := range b.props {
		props = append(props, member{p.name, p.render()})
		if !p.optional {
			required = append(required, p.name)
		}
	}
	root := object{{"type", "object"}, {"properties", props}}
	if len(required) > 0 {
		root = append(root, member{"required", required})
	}
	data, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err) // only plain strings, numbers and lists: unreachable
	}
	return data, nil
}

// check lists what is wrong with p beyond the options' own problems.
func (p *property) check() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	switch p.kind {
	case kindString:
		if p.minLength != nil && p.maxLength != nil && *p.minLength > *p.maxLength {
			bad("minLength %d is greater than maxLength %d", *p.minLength, *p.maxLength)
		}
		if p.defaultString != nil {
			n := utf8.RuneCountInString(*p.defaultString)
			if p.minLength != nil && n < *p.minLength {
				bad("default %q is shorter than minLength %d", *p.defaultString, *p.minLength)
			}
			if p.maxLength != nil && n > *p.maxLength {
				bad("default %q is longer than maxLength %d", *p.defaultString, *p.maxLength)
			}
			if p.format != "" && !validFormat(p.format, *p.defaultString) {
				bad("default %q is not a valid %s", *p.defaultString, p.format)
			}
		}
	case kindInteger, kindNumber:
		noun := "number"
		if p.kind == kindInteger {
			noun = "integer"
		}
		for _, v := range []struct {
			what string
			x    *float64
		}{{"minimum", p.minimum}, {"maximum", p.maximum}, {"default", p.defaultNumber}} {
			switch {
			case v.x == nil:
			case math.IsNaN(*v.x) || math.IsInf(*v.x, 0):
				bad("%s %v is not a finite number", v.what, *v.x)
			case p.kind == kindInteger && *v.x != math.Trunc(*v.x):
				bad("%s %v of an integer property is not a whole number", v.what, *v.x)
			case p.kind == kindInteger && math.Abs(*v.x) > 1<<53:
				bad("%s %v is beyond ±2^53, where integers stop being exact", v.what, *v.x)
			}
		}
		if p.minimum != nil && p.maximum != nil && *p.minimum > *p.maximum {
			bad("minimum %v is greater than maximum %v", *p.minimum, *p.maximum)
		}
		if d := p.defaultNumber; d != nil {
			if (p.minimum != nil && *d < *p.minimum) || (p.maximum != nil && *d > *p.maximum) {
				bad("default %v is outside the %s range", *d, noun)
			}
		}
	case kindChoice, kindChoiceTitled:
		out = append(out, p.checkChoices()...)
		if p.defaultChoice != nil && !p.hasChoice(*p.defaultChoice) {
			bad("default %q is not one of the choices", *p.defaultChoice)
		}
	case kindMany, kindManyTitled:
		out = append(out, p.checkChoices()...)
		n := len(p.choices)
		if p.minItems != nil && p.maxItems != nil && *p.minItems > *p.maxItems {
			bad("minItems %d is greater than maxItems %d", *p.minItems, *p.maxItems)
		}
		if p.minItems != nil && *p.minItems > n {
			bad("minItems %d exceeds the %d choices", *p.minItems, n)
		}
		if p.defaultChoices != nil {
			picked := map[string]bool{}
			for _, v := range p.defaultChoices {
				switch {
				case !p.hasChoice(v):
					bad("default %q is not one of the choices", v)
				case picked[v]:
					bad("default %q is listed twice", v)
				}
				picked[v] = true
			}
			if p.minItems != nil && len(p.defaultChoices) < *p.minItems {
				bad("default has %d picks, fewer than minItems %d", len(p.defaultChoices), *p.minItems)
			}
			if p.maxItems != nil && len(p.defaultChoices) > *p.maxItems {
				bad("default has %d picks, more than maxItems %d", len(p.defaultChoices), *p.maxItems)
			}
		}
	}
	return out
}

// checkChoices lists what is wrong with p's choices: none at all, empty
// values, missing titles, and repeats, any of which would make an answer
// ambiguous or the form unanswerable.
func (p *property) checkChoices() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if len(p.choices) == 0 {
		bad("no choices")
	}
	titled := p.kind == kindChoiceTitled || p.kind == kindManyTitled
	values := map[string]bool{}
	titles := map[string]bool{}
	for i, c := range p.choices {
		switch {
		case strings.TrimSpace(c.Value) == "":
			bad("choice %d has an empty value", i+1)
		case values[c.Value]:
			bad("choice %q is listed twice", c.Value)
		}
		values[c.Value] = true
		if !titled {
			if hasControl(c.Value) {
				bad("choice %q contains control characters", c.Value)
			}
			continue
		}
		switch {
		case strings.TrimSpace(c.Title) == "":
			bad("choice %q has no title", c.Value)
		case hasControl(c.Title):
			bad("the title of choice %q contains control characters", c.Value)
		case titles[c.Title]:
			bad("title %q is used by two choices", c.Title)
		}
		titles[c.Title] = true
	}
	return out
}

func (p *property) hasChoice(v string) bool {
	return slices.ContainsFunc(p.choices, func(c Choice) bool { return c.Value == v })
}

func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

// render is p's JSON Schema, keys in a fixed, readable order.
func (p *property) render() object {
	typ := map[kind]string{
		kindString: "string", kindInteger: "integer", kindNumber: "number", kindBool: "boolean",
		kindChoice: "string", kindChoiceTitled: "string", kindMany: "array", kindManyTitled: "array",
	}[p.kind]
	o := object{{"type", typ}}
	if p.title != nil {
		o = append(o, member{"title", *p.title})
	}
	if p.description != nil {
		o = append(o, member{"description", *p.description})
	}
	switch p.kind {
	case kindString:
		o = o.addInt("minLength", p.minLength).addInt("maxLength", p.maxLength)
		if p.format != "" {
			o = append(o, member{"format", p.format})
		}
		if p.defaultString != nil {
			o = append(o, member{"default", *p.defaultString})
		}
	case kindInteger, kindNumber:
		o = o.addNumber("minimum", p.minimum).addNumber("maximum", p.maximum).addNumber("default", p.defaultNumber)
	case kindBool:
		if p.defaultBool != nil {
			o = append(o, member{"default", *p.defaultBool})
		}
	case kindChoice:
		o = append(o, member{"enum", p.values()})
		if p.defaultChoice != nil {
			o = append(o, member{"default", *p.defaultChoice})
		}
	case kindChoiceTitled:
		o = append(o, member{"oneOf", p.titled()})
		if p.defaultChoice != nil {
			o = append(o, member{"default", *p.defaultChoice})
		}
	case kindMany, kindManyTitled:
		items := object{{"type", "string"}, {"enum", p.values()}}
		if p.kind == kindManyTitled {
			items = object{{"anyOf", p.titled()}} // no "type" next to anyOf: the Go SDK refuses it
		}
		o = append(o, member{"items", items})
		o = o.addInt("minItems", p.minItems).addInt("maxItems", p.maxItems)
		if p.defaultChoices != nil {
			o = append(o, member{"default", p.defaultChoices})
		}
	}
	return o
}

func (p *property) values() []string {
	out := make([]string, len(p.choices))
	for i, c := range p.choices {
		out[i] = c.Value
	}
	return out
}

func (p *property) titled() []object {
	out := make([]object, len(p.choices))
	for i, c := range p.choices {
		out[i] = object{{"const", c.Value}, {"title", c.Title}}
	}
	return out
}

// object is a JSON object that keeps its keys in order.
type object []member

type member struct {
	key   string
	value any
}

func (o object) addInt(key string, v *int) object {
	if v == nil {
		return o
	}
	return append(o, member{key, *v})
}

func (o object) addNumber(key string, v *float64) object {
	if v == nil {
		return o
	}
	return append(o, member{key, *v})
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		key, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, key...), ':'), value...)
	}
	return append(buf, '}'), nil
}
