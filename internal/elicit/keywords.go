package elicit

import "strings"

// commonKeywords may appear on every property.
var commonKeywords = map[string]bool{"type": true, "title": true, "description": true, "default": true}

// kindKeywords are the subset keywords that belong to one kind of property.
var kindKeywords = map[Kind]map[string]bool{
	KindString:      {"minLength": true, "maxLength": true, "format": true, "pattern": true},
	KindNumber:      {"minimum": true, "maximum": true},
	KindInteger:     {"minimum": true, "maximum": true},
	KindBoolean:     {},
	KindSingleEnum:  {"enum": true, "enumNames": true, "oneOf": true},
	KindMultiSelect: {"items": true, "minItems": true, "maxItems": true, "uniqueItems": true},
}

// isSubsetKeyword reports whether key belongs to some kind of property, so
// that a misplaced one gets a precise message.
func isSubsetKeyword(key string) bool {
	if commonKeywords[key] {
		return true
	}
	for _, words := range kindKeywords {
		if words[key] {
			return true
		}
	}
	return false
}

// annotationTypes are the JSON-Schema annotations tolerated on properties,
// items and titled options, with the JSON type each must have (the SDKs
// decode them into typed fields, so a wrong type would break them).
var annotationTypes = map[string]jsonType{
	"$comment":   jsonString,
	"examples":   jsonArray,
	"deprecated": jsonBool,
}

// isExtensionKey reports whether key is a vendor extension ("x-…"), which
// carries no validation meaning and is tolerated anywhere.
func isExtensionKey(key string) bool { return strings.HasPrefix(key, "x-") }

// checkAnnotation returns an error if key is a tolerated annotation of the
// wrong JSON type, and reports whether key is an annotation at all.
func checkAnnotation(key string, v *jsonValue, at jsonPath) (bool, error) {
	if isExtensionKey(key) {
		return true, nil
	}
	want, ok := annotationTypes[key]
	if !ok {
		return false, nil
	}
	if v.typ != want {
		return true, at.key(key).errorf("must be %s, got %s", want, v.typ)
	}
	return true, nil
}

// kindNoun names a kind in messages.
func kindNoun(k Kind) string {
	switch k {
	case KindSingleEnum:
		return "single-select enum"
	case KindMultiSelect:
		return "multi-select"
	default:
		return string(k)
	}
}
