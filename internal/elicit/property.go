package elicit

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
)

// parseProperty classifies one property schema and checks it against the
// rules of its kind.
func parseProperty(key string, v *jsonValue, required bool, at jsonPath) (Property, error) {
	if v.typ != jsonObject {
		return Property{}, at.errorf("must be a schema object, got %s", v.typ)
	}
	if v.get("properties") != nil || isString(v.get("type"), "object") {
		return Property{}, at.errorf("nested objects are not allowed in elicitation schemas")
	}
	if err := checkForeignKeywords(v, at); err != nil {
		return Property{}, err
	}
	kind, err := classify(v, at)
	if err != nil {
		return Property{}, err
	}
	if err := checkKindKeywords(v, kind, at); err != nil {
		return Property{}, err
	}
	p := Property{Key: key, Kind: kind, Required: required}
	if p.Title, err = optionalString(v, "title", at); err != nil {
		return Property{}, err
	}
	if p.Description, err = optionalString(v, "description", at); err != nil {
		return Property{}, err
	}
	switch kind {
	case KindString:
		err = parseTextProperty(&p, v, at)
	case KindNumber, KindInteger:
		err = parseNumericProperty(&p, v, at)
	case KindBoolean:
		err = parseBooleanProperty(&p, v, at)
	case KindSingleEnum:
		err = parseSingleEnum(&p, v, at)
	case KindMultiSelect:
		err = parseMultiSelect(&p, v, at)
	}
	if err != nil {
		return Property{}, err
	}
	return p, nil
}

// checkForeignKeywords rejects, in document order, the first key that is
// neither a keyword of the subset nor a tolerated annotation.
func checkForeignKeywords(v *jsonValue, at jsonPath) error {
	for _, m := range v.members {
		if isSubsetKeyword(m.key) {
			continue
		}
		isAnnotation, err := checkAnnotation(m.key, m.value, at)
		if err != nil {
			return err
		}
		if !isAnnotation {
			return at.errorf("keyword %q is not allowed in elicitation schemas", m.key)
		}
	}
	return nil
}

// checkKindKeywords rejects subset keywords that belong to another kind,
// such as "minimum" on a string.
func checkKindKeywords(v *jsonValue, kind Kind, at jsonPath) error {
	for _, m := range v.members {
		if isSubsetKeyword(m.key) && !commonKeywords[m.key] && !kindKeywords[kind][m.key] {
			return at.errorf("keyword %q is not allowed on %s properties", m.key, kindNoun(kind))
		}
	}
	return nil
}

func classify(v *jsonValue, at jsonPath) (Kind, error) {
	typ := v.get("type")
	switch {
	case typ == nil:
		return "", at.errorf(`missing "type" (one of string, number, integer, boolean or array)`)
	case typ.typ == jsonArray:
		return "", at.key("type").errorf(`type arrays such as ["string","null"] are not allowed; use exactly one type`)
	case typ.typ != jsonString:
		return "", at.key("type").errorf("must be a string, got %s", typ.typ)
	}
	switch typ.text {
	case "string":
		if v.get("enum") != nil || v.get("oneOf") != nil {
			return KindSingleEnum, nil
		}
		return KindString, nil
	case "number":
		return KindNumber, nil
	case "integer":
		return KindInteger, nil
	case "boolean":
		return KindBoolean, nil
	case "array":
		return KindMultiSelect, nil
	}
	return "", at.key("type").errorf("unsupported type %q (use string, number, integer, boolean or array)", typ.text)
}

var allowedFormats = map[string]bool{"email": true, "uri": true, "date": true, "date-time": true}

func parseTextProperty(p *Property, v *jsonValue, at jsonPath) error {
	var err error
	if p.MinLength, p.MaxLength, err = countRange(v, "minLength", "maxLength", at); err != nil {
		return err
	}
	if p.Format, err = optionalString(v, "format", at); err != nil {
		return err
	}
	if v.get("format") != nil && !allowedFormats[p.Format] {
		return at.key("format").errorf("format %q is not allowed (use email, uri, date or date-time)", p.Format)
	}
	if p.Pattern, err = optionalString(v, "pattern", at); err != nil {
		return err
	}
	if v.get("pattern") != nil {
		if p.pattern, err = regexp.Compile(p.Pattern); err != nil {
			return at.key("pattern").errorf("%s", patternProblem(err))
		}
	}
	def := v.get("default")
	if def == nil {
		return nil
	}
	if def.typ != jsonString {
		return at.key("default").errorf("must be a string, got %s", def.typ)
	}
	if problem := p.textProblem(def.text); problem != "" {
		return at.key("default").errorf("%s", problem)
	}
	p.Default = def.text
	return nil
}

func parseNumericProperty(p *Property, v *jsonValue, at jsonPath) error {
	var err error
	if p.Minimum, err = optionalNumber(v, "minimum", at); err != nil {
		return err
	}
	if p.Maximum, err = optionalNumber(v, "maximum", at); err != nil {
		return err
	}
	if p.Minimum != nil && p.Maximum != nil {
		if *p.Minimum > *p.Maximum {
			return at.key("minimum").errorf("minimum %s is greater than maximum %s", formatNumber(*p.Minimum), formatNumber(*p.Maximum))
		}
		if p.Kind == KindInteger && math.Ceil(*p.Minimum) > math.Floor(*p.Maximum) {
			return at.key("minimum").errorf("no integer lies between minimum %s and maximum %s", formatNumber(*p.Minimum), formatNumber(*p.Maximum))
		}
	}
	def := v.get("default")
	if def == nil {
		return nil
	}
	if def.typ != jsonNumber {
		return at.key("default").errorf("must be a number, got %s", def.typ)
	}
	value, problem := p.parseNumeric(def.text)
	if problem == "" {
		problem = p.rangeProblem(value)
	}
	if problem != "" {
		return at.key("default").errorf("%s", problem)
	}
	p.Default = value
	return nil
}

func parseBooleanProperty(p *Property, v *jsonValue, at jsonPath) error {
	def := v.get("default")
	if def == nil {
		return nil
	}
	if def.typ != jsonBool {
		return at.key("default").errorf("must be true or false, got %s", def.typ)
	}
	p.Default = def.boolean
	return nil
}

func parseSingleEnum(p *Property, v *jsonValue, at jsonPath) error {
	enum, names, oneOf := v.get("enum"), v.get("enumNames"), v.get("oneOf")
	var err error
	switch {
	case enum != nil && oneOf != nil:
		return at.key("oneOf").errorf("use either enum or oneOf, not both")
	case names != nil && enum == nil:
		return at.key("enumNames").errorf("enumNames is only allowed next to enum")
	case enum != nil:
		p.Choices, err = untitledChoices(enum, names, at)
	default:
		p.Choices, err = titledChoices(oneOf, at.key("oneOf"))
	}
	if err != nil {
		return err
	}
	p.choices = newChoiceIndex(p.Choices)
	def := v.get("default")
	if def == nil {
		return nil
	}
	if def.typ != jsonString {
		return at.key("default").errorf("must be a string, got %s", def.typ)
	}
	if _, ok := p.choices.byValue[def.text]; !ok {
		return at.key("default").errorf("%s is not one of the allowed values", quote(def.text))
	}
	p.Default = def.text
	return nil
}

func parseMultiSelect(p *Property, v *jsonValue, at jsonPath) error {
	var err error
	if p.Choices, err = multiSelectChoices(v.get("items"), at); err != nil {
		return err
	}
	p.choices = newChoiceIndex(p.Choices)
	if p.MinItems, p.MaxItems, err = countRange(v, "minItems", "maxItems", at); err != nil {
		return err
	}
	if p.MinItems != nil && *p.MinItems > len(p.Choices) {
		return at.key("minItems").errorf("minItems %d exceeds the %d choices", *p.MinItems, len(p.Choices))
	}
	if u := v.get("uniqueItems"); u != nil && (u.typ != jsonBool || !u.boolean) {
		return at.key("uniqueItems").errorf("only true is allowed (multi-select answers are always unique)")
	}
	if def := v.get("default"); def != nil {
		return parseMultiSelectDefault(p, def, at.key("default"))
	}
	return nil
}

func parseMultiSelectDefault(p *Property, def *jsonValue, at jsonPath) error {
	if def.typ != jsonArray {
		return at.errorf("must be an array of values, got %s", def.typ)
	}
	picked := make([]bool, len(p.Choices))
	for i, item := range def.items {
		if item.typ != jsonString {
			return at.index(i).errorf("must be a string, got %s", item.typ)
		}
		c, ok := p.choices.byValue[item.text]
		switch {
		case !ok:
			return at.index(i).errorf("%s is not one of the allowed values", quote(item.text))
		case picked[c]:
			return at.index(i).errorf("%s is listed twice", quote(item.text))
		}
		picked[c] = true
	}
	if problem := p.itemsProblem(len(def.items)); problem != "" {
		return at.errorf("%s", problem)
	}
	p.Default = pickedValues(p.Choices, picked)
	return nil
}

// patternProblem says why a pattern cannot be used, in a schema author's
// terms: which construct, and that questiond's regular expressions are RE2's
// (no lookaround, no backreferences), not JavaScript's.
func patternProblem(err error) string {
	var bad *syntax.Error
	if !errors.As(err, &bad) {
		return "the pattern is not a regular expression questiond can use: " + err.Error()
	}
	what := strings.TrimPrefix(string(bad.Code), "invalid or unsupported ")
	return fmt.Sprintf("the pattern is not a regular expression questiond can use: %s at %q "+
		"(patterns are RE2: no lookahead or lookbehind, no backreferences)",
		what, bad.Expr)
}
