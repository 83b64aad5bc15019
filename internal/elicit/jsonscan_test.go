package elicit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzScanTreeMatchesDecodeTree holds the fast decoder to the token walk it
// stands in for: on every valid document it gives the very same tree, or
// gives up where the walk reports a problem (a duplicate key, too deep).
func FuzzScanTreeMatchesDecodeTree(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"a":{"type":"string","title":"A \"quoted\" \u00e9 \ud83d\ude00 \ud800","enum":["x","y"]}}}`,
		` [ 1 , -2.5e+3 , 0.0E-1 , true , false , null , "" , [] , {} ] `,
		`{"a":1,"a":2}`,
		`{"k\u0061":1,"ka":2}`,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		`"\u2028 \/ \b\f\n\r\t"`,
		`{"a":{"b":{"c":[{"d":"e"}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	// The elicit fuzz corpora are realistic schemas.
	for _, target := range []string{"FuzzParseSchema", "FuzzFromPrompts"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) {
			return
		}
		slow, err := decodeTree(raw)
		fast, ok := scanTree(raw)
		switch {
		case ok && err != nil:
			t.Fatalf("scanTree accepted what decodeTree refuses (%v): %q", err, raw)
		case !ok && err == nil:
			t.Fatalf("scanTree gave up on what decodeTree accepts: %q", raw)
		case ok && !reflect.DeepEqual(fast, slow):
			t.Fatalf("the trees of %q differ", raw)
		}
	})
}
