package elicit

import (
	"fmt"
	"math"
	"regexp"
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
			return at.key("pattern").errorf("invalid regular expression: %v", err)
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

// pickedValues lists the values of the picked choices in schema order.
func pickedValues(choices []Choice, picked []bool) []string {
	values := []string{}
	for i, ok := range picked {
		if ok {
			values = append(values, choices[i].Value)
		}
	}
	return values
}

// multiSelectItems are the keys allowed inside "items" of a multi-select.
var multiSelectItems = map[string]bool{"type": true, "enum": true, "anyOf": true, "oneOf": true}

func multiSelectChoices(items *jsonValue, at jsonPath) ([]Choice, error) {
	if items == nil {
		return nil, at.errorf(`missing "items" (a multi-select needs items.enum or items.anyOf)`)
	}
	at = at.key("items")
	if items.typ != jsonObject {
		return nil, at.errorf("must be an object, got %s", items.typ)
	}
	if items.get("properties") != nil || isString(items.get("type"), "object") {
		return nil, at.errorf("arrays of objects are not allowed in elicitation schemas")
	}
	for _, m := range items.members {
		isAnnotation, err := checkAnnotation(m.key, m.value, at)
		if err != nil {
			return nil, err
		}
		if !multiSelectItems[m.key] && !isAnnotation {
			return nil, at.errorf("keyword %q is not allowed in multi-select items", m.key)
		}
	}
	typ := items.get("type")
	if typ != nil && !isString(typ, "string") {
		return nil, at.key("type").errorf(`multi-select items must be "string", got %s`, describe(typ))
	}
	var lists []string
	for _, k := range []string{"enum", "anyOf", "oneOf"} {
		if items.get(k) != nil {
			lists = append(lists, k)
		}
	}
	switch {
	case len(lists) == 0:
		return nil, at.errorf(`needs "enum" or "anyOf" listing the choices`)
	case len(lists) > 1:
		return nil, at.errorf("use only one of enum, anyOf or oneOf")
	case lists[0] == "enum" && typ == nil:
		return nil, at.errorf(`missing "type": "string" (required next to items.enum)`)
	case lists[0] == "enum":
		return untitledChoices(items.get("enum"), nil, at)
	case typ != nil:
		// The spec's titled multi-select has no items.type, and the Go SDK
		// rejects one, so say so now rather than fail the agent later.
		return nil, at.key("type").errorf("not allowed next to items.%s (titled multi-select items hold only the options)", lists[0])
	default:
		return titledChoices(items.get(lists[0]), at.key(lists[0]))
	}
}

// untitledChoices reads "enum" and the legacy parallel "enumNames".
func untitledChoices(enum, names *jsonValue, at jsonPath) ([]Choice, error) {
	values, err := nonEmptyStrings(enum, at.key("enum"), "value")
	if err != nil {
		return nil, err
	}
	choices := make([]Choice, len(values))
	for i, value := range values {
		choices[i] = Choice{Value: value, Label: value}
	}
	if names != nil {
		labels, err := nonEmptyStrings(names, at.key("enumNames"), "name")
		if err != nil {
			return nil, err
		}
		if len(labels) != len(values) {
			return nil, at.key("enumNames").errorf("has %d names for %d enum values; they must pair up one to one", len(labels), len(values))
		}
		for i := range choices {
			choices[i].Label = labels[i]
		}
	}
	labelAt := func(i int) jsonPath { return at.key("enum").index(i) }
	if names != nil {
		labelAt = func(i int) jsonPath { return at.key("enumNames").index(i) }
	}
	return choices, checkChoices(choices, func(i int) jsonPath { return at.key("enum").index(i) }, labelAt)
}

// nonEmptyStrings reads a non-empty array of strings that are not blank.
func nonEmptyStrings(list *jsonValue, at jsonPath, noun string) ([]string, error) {
	if list.typ != jsonArray {
		return nil, at.errorf("must be an array of strings, got %s", list.typ)
	}
	if len(list.items) == 0 {
		return nil, at.errorf("must list at least one %s", noun)
	}
	out := make([]string, len(list.items))
	for i, item := range list.items {
		if item.typ != jsonString {
			return nil, at.index(i).errorf("must be a string, got %s", item.typ)
		}
		if strings.TrimSpace(item.text) == "" {
			return nil, at.index(i).errorf("must not be blank")
		}
		out[i] = item.text
	}
	return out, nil
}

// titledChoices reads the [{const, title}] form used by oneOf and anyOf.
func titledChoices(list *jsonValue, at jsonPath) ([]Choice, error) {
	if list.typ != jsonArray {
		return nil, at.errorf("must be an array of {const, title} options, got %s", list.typ)
	}
	if len(list.items) == 0 {
		return nil, at.errorf("must list at least one option")
	}
	choices := make([]Choice, len(list.items))
	for i, item := range list.items {
		c, err := titledChoice(item, at.index(i))
		if err != nil {
			return nil, err
		}
		choices[i] = c
	}
	return choices, checkChoices(choices,
		func(i int) jsonPath { return at.index(i).key("const") },
		func(i int) jsonPath { return at.index(i).key("title") })
}

func titledChoice(item *jsonValue, at jsonPath) (Choice, error) {
	if item.typ != jsonObject {
		return Choice{}, at.errorf("must be a {const, title} object, got %s", item.typ)
	}
	for _, m := range item.members {
		if m.key == "const" || m.key == "title" {
			continue
		}
		isAnnotation, err := checkAnnotation(m.key, m.value, at)
		if err != nil {
			return Choice{}, err
		}
		if !isAnnotation {
			return Choice{}, at.errorf(`keyword %q is not allowed in a titled option (only "const" and "title")`, m.key)
		}
	}
	value, title := item.get("const"), item.get("title")
	switch {
	case value == nil:
		return Choice{}, at.errorf(`missing "const"`)
	case value.typ != jsonString:
		return Choice{}, at.key("const").errorf("must be a string, got %s", value.typ)
	case value.text == "":
		return Choice{}, at.key("const").errorf("must not be empty")
	case title == nil:
		return Choice{}, at.errorf(`missing "title"`)
	case title.typ != jsonString:
		return Choice{}, at.key("title").errorf("must be a string, got %s", title.typ)
	case strings.TrimSpace(title.text) == "":
		return Choice{}, at.key("title").errorf("must not be blank")
	}
	return Choice{Value: value.text, Label: title.text}, nil
}

// checkChoices rejects repeated values and repeated labels, either of which
// would make an answer ambiguous, and labels with control characters, which
// a terminal could act on and an operator could not type.
func checkChoices(choices []Choice, valueAt, labelAt func(int) jsonPath) error {
	values := make(map[string]bool, len(choices))
	labels := make(map[string]bool, len(choices))
	for i, c := range choices {
		if values[c.Value] {
			return valueAt(i).errorf("duplicate value %s", quote(c.Value))
		}
		if hasControl(c.Label) {
			return labelAt(i).errorf("option labels must not contain control characters")
		}
		if labels[c.Label] {
			return labelAt(i).errorf("duplicate option label %s", quote(c.Label))
		}
		values[c.Value], labels[c.Label] = true, true
	}
	return nil
}

// countRange reads a pair of non-negative integer bounds such as
// minLength/maxLength.
func countRange(v *jsonValue, minKey, maxKey string, at jsonPath) (*int, *int, error) {
	lo, err := optionalCount(v, minKey, at)
	if err != nil {
		return nil, nil, err
	}
	hi, err := optionalCount(v, maxKey, at)
	if err != nil {
		return nil, nil, err
	}
	if lo != nil && hi != nil && *lo > *hi {
		return nil, nil, at.key(minKey).errorf("%s %d is greater than %s %d", minKey, *lo, maxKey, *hi)
	}
	return lo, hi, nil
}

// optionalCount reads a count keyword. It accepts what the SDKs decode into
// an int32: a plain integer literal, or a decimal one with a zero fraction.
func optionalCount(v *jsonValue, key string, at jsonPath) (*int, error) {
	n := v.get(key)
	if n == nil {
		return nil, nil
	}
	if n.typ != jsonNumber {
		return nil, at.key(key).errorf("must be a non-negative integer, got %s", n.typ)
	}
	d, ok := scanDecimal(n.text)
	count, isInt := d.integer()
	if !ok || strings.ContainsAny(n.text, "eE") || !isInt || count < 0 || count > math.MaxInt32 {
		return nil, at.key(key).errorf("must be a non-negative integer up to %d, got %s", math.MaxInt32, n.text)
	}
	c := int(count)
	return &c, nil
}

func optionalNumber(v *jsonValue, key string, at jsonPath) (*float64, error) {
	n := v.get(key)
	if n == nil {
		return nil, nil
	}
	if n.typ != jsonNumber {
		return nil, at.key(key).errorf("must be a number, got %s", n.typ)
	}
	f, problem := parseFloatText(n.text)
	if problem != "" {
		return nil, at.key(key).errorf("%s", problem)
	}
	return &f, nil
}

func optionalString(v *jsonValue, key string, at jsonPath) (string, error) {
	s := v.get(key)
	if s == nil {
		return "", nil
	}
	if s.typ != jsonString {
		return "", at.key(key).errorf("must be a string, got %s", s.typ)
	}
	return s.text, nil
}

func isString(v *jsonValue, want string) bool {
	return v != nil && v.typ == jsonString && v.text == want
}

// describe shows a JSON value in a message: strings quoted, other values by
// their type.
func describe(v *jsonValue) string {
	if v.typ == jsonString {
		return quote(v.text)
	}
	return fmt.Sprint(v.typ)
}
