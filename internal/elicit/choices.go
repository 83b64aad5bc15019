package elicit

import (
	"fmt"
	"strings"
)

// Reading the options of enums and multi-selects.

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
// a terminal could act on and an operator could not type. It turns each
// label into the label operators see (Shown). Repeats are compared as
// operators see them (sameToOperators): two values or labels that differ
// only in invisible characters or compatibility forms are repeats too.
func checkChoices(choices []Choice, valueAt, labelAt func(int) jsonPath) error {
	values := make(map[string]string, len(choices)) // sameToOperators key → value
	labels := make(map[string]string, len(choices)) // sameToOperators key → label
	for i, c := range choices {
		if first, ok := values[sameToOperators(c.Value)]; ok {
			return valueAt(i).errorf("duplicate value %s", lookalike(c.Value, first))
		}
		if hasControl(c.Label) {
			return labelAt(i).errorf("option labels must not contain control characters")
		}
		shown := Shown(c.Label)
		if first, ok := labels[sameToOperators(shown)]; ok {
			return labelAt(i).errorf("duplicate option label %s", lookalike(c.Label, first))
		}
		choices[i].Label = shown
		values[sameToOperators(c.Value)], labels[sameToOperators(shown)] = c.Value, shown
	}
	return nil
}

// lookalike quotes text, a repeat of first (as sameToOperators compares),
// saying why when the two are not the same bytes.
func lookalike(text, first string) string {
	switch shown := Shown(text); {
	case text == first:
		return quote(text)
	case shown == first:
		return quote(shown) + " as operators see it (bidirectional controls and invisible characters are shown as U+FFFD, marks removed)"
	default:
		return fmt.Sprintf("%s: operators cannot tell it from %s (they are the same text without invisible characters, in compatibility form)", quote(text), quote(first))
	}
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
