package client

import (
	"fmt"
	"math"
)

// Result is an MCP ElicitResult: what the operator did, and for accept the
// answers keyed by the schema's property names.
type Result struct {
	Action  string         `json:"action"`            // "accept" | "decline" | "cancel"
	Content map[string]any `json:"content,omitempty"` // only for accept, values as decoded from JSON (float64 numbers, []any arrays)
}

// Accepted reports whether the operator answered (action "accept").
func (r *Result) Accepted() bool { return r != nil && r.Action == ActionAccept }

// value looks key up in the content of an accepted result.
func (r *Result) value(key string) (any, error) {
	if r == nil {
		return nil, fmt.Errorf("questiond: %q: no result", key)
	}
	if r.Action != ActionAccept {
		return nil, fmt.Errorf("questiond: %q: the elicitation was not accepted (action %q)", key, r.Action)
	}
	v, ok := r.Content[key]
	if !ok {
		return nil, fmt.Errorf("questiond: %q: not in the content (unanswered optional property?)", key)
	}
	return v, nil
}

// String returns the string value of key: a string property or a single choice.
func (r *Result) String(key string) (string, error) {
	v, err := r.value(key)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", wrongType(key, "a string", v)
	}
	return s, nil
}

// Int returns the integer value of key. It fails if the value is missing,
// not a whole number, or beyond int64.
func (r *Result) Int(key string) (int64, error) {
	v, err := r.value(key)
	if err != nil {
		return 0, err
	}
	f, ok := v.(float64)
	if !ok {
		return 0, wrongType(key, "an integer", v)
	}
	if f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("questiond: %q: want an integer, found %v", key, f)
	}
	// float64(math.MaxInt64) rounds up to 2^63, which is already out of range.
	if f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("questiond: %q: %v is out of the int64 range", key, f)
	}
	return int64(f), nil
}

// Float returns the number value of key (a number or integer property).
func (r *Result) Float(key string) (float64, error) {
	v, err := r.value(key)
	if err != nil {
		return 0, err
	}
	f, ok := v.(float64)
	if !ok {
		return 0, wrongType(key, "a number", v)
	}
	return f, nil
}

// Bool returns the boolean value of key.
func (r *Result) Bool(key string) (bool, error) {
	v, err := r.value(key)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, wrongType(key, "a boolean", v)
	}
	return b, nil
}

// Strings returns the picks of a multi-select property key, in schema order.
func (r *Result) Strings(key string) ([]string, error) {
	v, err := r.value(key)
	if err != nil {
		return nil, err
	}
	var out []string
	switch list := v.(type) {
	case []string:
		out = append([]string{}, list...)
	case []any:
		out = make([]string, 0, len(list))
		for i, item := range list {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("questiond: %q: want a list of strings, found %s at index %d", key, describe(item), i)
			}
			out = append(out, s)
		}
	default:
		return nil, wrongType(key, "a list of strings", v)
	}
	return out, nil
}

func wrongType(key, want string, found any) error {
	return fmt.Errorf("questiond: %q: want %s, found %s", key, want, describe(found))
}

// describe names a decoded JSON value for an error message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any, []string:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
