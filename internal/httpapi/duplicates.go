package httpapi

import (
	"bytes"
	"encoding/json"
)

// firstDuplicateKey returns the first key that repeats among the members of
// the JSON object raw, and whether one does. Only raw's own members are
// compared; a raw that is not a valid object has none (its decoding says
// what is wrong). encoding/json keeps the last of repeated keys, so without
// this check an agent's body could mean one thing to questiond and another
// to a proxy or a log reader that keeps the first.
func firstDuplicateKey(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := make(map[string]bool, 8)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := tok.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// refuseDuplicateKeys is a 400 naming the first repeated key of the object
// raw, found at prefix (a path like `["params"]`, or "" for the body).
func refuseDuplicateKeys(raw []byte, prefix string) error {
	if key, ok := firstDuplicateKey(raw); ok {
		return newBadRequest(kindPayload, "Duplicate key %q: each key may appear once in an object\n  at %s[%q]", key, prefix, key)
	}
	return nil
}
