package pending

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// encodeRecord is a question's durable form: its JSON, without Form.
func encodeRecord(q *Question) ([]byte, error) {
	data, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("encode question %q: %w", cutID(q.ID), err)
	}
	return data, nil
}

// decodeRecord reads what encodeRecord wrote. Numbers in the result content
// come back as int64 when they are whole and float64 otherwise, and lists of
// strings as []string, the types elicit produces, so a restored result
// encodes to the same JSON as the original.
func decodeRecord(data []byte) (*Question, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var q Question
	if err := dec.Decode(&q); err != nil {
		return nil, err
	}
	if string(q.Schema) == "null" {
		q.Schema = nil
	}
	if q.Ended != nil {
		for k, v := range q.Ended.Result.Content {
			q.Ended.Result.Content[k] = contentValue(v)
		}
	}
	return &q, nil
}

func contentValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		if !strings.ContainsAny(v.String(), ".eE") {
			if i, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
				return i
			}
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v
	case []any:
		strs := make([]string, len(v))
		for i, item := range v {
			s, ok := item.(string)
			if !ok {
				return v
			}
			strs[i] = s
		}
		return strs
	default:
		return v
	}
}

// EncodeRecord is the durable form of q that every journal stores: its
// JSON, without Form. DecodeRecord reads it back.
func EncodeRecord(q *Question) ([]byte, error) { return encodeRecord(q) }

// DecodeRecord reads a record EncodeRecord wrote, with content numbers and
// lists of strings as elicit produces them, so that a restored result
// encodes to the same JSON as the original.
func DecodeRecord(data []byte) (*Question, error) { return decodeRecord(data) }
