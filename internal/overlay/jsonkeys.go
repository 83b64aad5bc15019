package overlay

import (
	"bytes"
	"encoding/json"
)

// topLevelKey reports whether the JSON object obj has the member key (it
// reads the members' names and skips their values).
func topLevelKey(obj []byte, key string) bool {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if name, _ := tok.(string); name == key {
			return true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
