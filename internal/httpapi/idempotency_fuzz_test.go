package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// FuzzParseIdempotencyKey feeds arbitrary header values to the key parser: it
// never panics, refuses with a 400 about the header, accepts only 1 to 255
// printable ASCII characters, and reads a key and its structured-field
// spelling as the same key.
func FuzzParseIdempotencyKey(f *testing.F) {
	for _, seed := range []string{
		"0193f4c2-7b1e-7cc1-9d2a-5b3f0e1c2d3e", `"0193f4c2-7b1e-7cc1-9d2a-5b3f0e1c2d3e"`, `""`, ``, `"`,
		`"a\"b"`, `"a\\b"`, `"a\b"`, `"a"b`, `a"b`, "ключ", "a\tb", " a ", strings.Repeat("k", 256),
		`"` + strings.Repeat("k", 255) + `"`, "\x00", "\x7f",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		key, err := parseIdempotencyKey(http.Header{idempotencyKeyHeader: {value}})
		if err != nil {
			var bad *wire.BadRequest
			if !errors.As(err, &bad) || bad.Kind != wire.KindHeaders || !strings.Contains(bad.Message, idempotencyKeyHeader) {
				t.Fatalf("error %v is not a 400 naming the header", err)
			}
			return
		}
		if key == "" || len(key) > maxIdempotencyKey {
			t.Fatalf("accepted a key of %d bytes from %q", len(key), value)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("accepted %q from %q: not printable ASCII", key, value)
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if again, err := parseIdempotencyKey(http.Header{idempotencyKeyHeader: {quoted}}); err != nil || again != key {
			t.Fatalf("%q quoted as %q reads %q, %v", key, quoted, again, err)
		}
	})
}

// FuzzFingerprint checks that a request's fingerprint ignores spacing and
// member order: re-encoding an accepted body with sorted, indented members
// keeps it, and the route changes it.
func FuzzFingerprint(f *testing.F) {
	for _, seed := range []string{
		`{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		`{"requestedSchema":{"properties":{"a":{"type":"number","minimum":1.50}},"type":"object"},"message":"m","timeout":90}`,
		`{"method":"elicitation/create","params":{"message":"m","requestedSchema":{},"_meta":{"progressToken":7}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m","tool":{"messageID":"msg_1","callID":"c"}}}`,
		`{"message":"\u00e9\u2028<>&","sessionID":"ses_1","directory":"/srv"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		params, _, err := parseCreateBody(body)
		if err != nil {
			return
		}
		var tree any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if dec.Decode(&tree) != nil {
			return
		}
		again, err := json.MarshalIndent(tree, " ", "\t")
		if err != nil {
			return
		}
		reparsed, _, err := parseCreateBody(again)
		if err != nil {
			t.Fatalf("%s re-encoded as %s is refused: %v", body, again, err)
		}
		want := fingerprint(routeElicit, params)
		if got := fingerprint(routeElicit, reparsed); got != want {
			t.Fatalf("fingerprint of %s changes when re-encoded as %s", body, again)
		}
		if fingerprint(routeElicitations, params) == want {
			t.Fatal("the route is not part of the fingerprint")
		}
	})
}
