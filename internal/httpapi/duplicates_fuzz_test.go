package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decoderDuplicateKey is the first repeated key among raw's own members as
// json.Decoder reads them: the answer firstDuplicateKey must give on
// valid JSON, by another road.
func decoderDuplicateKey(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
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

// FuzzFirstDuplicateKey holds the hand-written scan to json.Decoder's
// reading: on valid JSON the same repeated key (or none), on anything else
// none, and never a panic.
func FuzzFirstDuplicateKey(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"a":2}`, `{"a":1,"b":2}`, `{"a":1,"\u0061":2}`, `{"a\"":1,"a\"":2}`, `{"a\\":1,"a\\":2}`,
		` { "a" : [1,{"a":2}] , "b" : "}" , "a" : null } `, `{"a":{"a":1,"a":2}}`, `{"x":"\"","x":0}`,
		`{"a":1 2,"a":3}`, `{"a":[1 2],"a":3}`, `{"a":1,"a":2,`, `{"\xff":1,"\xfe":2}`, `{"é":1,"\u00e9":2}`,
		`[{"a":1,"a":2}]`, `"a"`, ``, `{`, `{}`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{"":1,"":2}`,
		`{"a":"\ud800","b":true,"b":false}`, `{"a":-1.5e+3,"c":[],"c":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		key, found := firstDuplicateKey(raw)
		if !json.Valid(raw) {
			if found {
				t.Fatalf("%q is not valid JSON, yet the key %q is reported repeated", raw, key)
			}
			return
		}
		wantKey, want := decoderDuplicateKey(raw)
		if found != want || key != wantKey {
			t.Fatalf("%q: repeated key %q (%v); json.Decoder reads %q (%v)", raw, key, found, wantKey, want)
		}
	})
}

// BenchmarkFirstDuplicateKey measures the scan on an elicitation body
// against json.Decoder's reading of the same body, the baseline it
// replaced.
func BenchmarkFirstDuplicateKey(b *testing.B) {
	body := []byte(`{"message":"Which machine, and what is wrong with it?","requestedSchema":{"type":"object",
		"properties":{"model":{"type":"string","title":"Model","enum":["SY215C","SY365H","SY500H"]},
		"symptoms":{"type":"array","items":{"type":"string","enum":["Black smoke","Low power","Noise"]}},
		"hours":{"type":"integer","minimum":0},"note":{"type":"string","description":"Anything else \"odd\"?"}},
		"required":["model"]},"sessionID":"ses_0123456789abcdef"}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			firstDuplicateKey(body)
		}
	})
	b.Run("decoder", func(b *testing.B) {
		for b.Loop() {
			decoderDuplicateKey(body)
		}
	})
}
