package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// Idempotency-Key (IETF httpapi draft "The Idempotency-Key HTTP Header
// Field") makes a create safe to send again after a lost answer: the same
// key and the same request get the question the first attempt asked.
const (
	idempotencyKeyHeader = "Idempotency-Key"
	// replayedHeader marks an answer about a question an earlier request
	// with the same key created.
	replayedHeader = "Idempotent-Replayed"
	// maxIdempotencyKey bounds a key, in bytes: a UUID takes 36.
	maxIdempotencyKey = 255
)

// The two routes that create, as they enter a request's fingerprint: a key
// used on one cannot be replayed on the other.
const (
	routeElicitations = "POST /elicitations"
	routeElicit       = "POST /elicit"
)

// requestKey is the Idempotency-Key of a create request with the
// fingerprint of what it asks; the zero value is an unkeyed request.
type requestKey struct {
	key  string
	hash string
}

// newRequestKey is the requestKey of a request to route with params p and
// Idempotency-Key key ("": none).
func newRequestKey(key, route string, p *createParams) requestKey {
	if key == "" {
		return requestKey{}
	}
	return requestKey{key: key, hash: fingerprint(route, p)}
}

// parseIdempotencyKey reads the header: absent is "" (no key). A key is 1 to
// 255 printable ASCII characters, bare or as a structured-field string
// ("…", with \" and \\ escapes) as the draft writes it; both spellings are the
// same key.
func parseIdempotencyKey(h http.Header) (string, error) {
	values := h.Values(idempotencyKeyHeader)
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", wire.NewBadRequest(wire.KindHeaders, "Expected one Idempotency-Key, got %d\n  at [\"Idempotency-Key\"]", len(values))
	}
	raw := strings.TrimSpace(values[0])
	key, ok := unquoteKey(raw)
	switch {
	case !ok:
		return "", wire.NewBadRequest(wire.KindHeaders, "Expected a string of printable ASCII, got %.300q\n  at [\"Idempotency-Key\"]", raw)
	case key == "":
		return "", wire.NewBadRequest(wire.KindHeaders, "Idempotency-Key must not be empty\n  at [\"Idempotency-Key\"]")
	case len(key) > maxIdempotencyKey:
		return "", wire.NewBadRequest(wire.KindHeaders, "Idempotency-Key is %d characters long; the most is %d\n  at [\"Idempotency-Key\"]", len(key), maxIdempotencyKey)
	}
	return key, nil
}

// unquoteKey returns the key in raw: raw itself, or the content of a
// structured-field string. Every character must be printable ASCII.
func unquoteKey(raw string) (string, bool) {
	for i := 0; i < len(raw); i++ {
		if raw[i] < 0x20 || raw[i] > 0x7e {
			return "", false
		}
	}
	if !strings.HasPrefix(raw, `"`) {
		return raw, true
	}
	var b strings.Builder
	for i := 1; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			return b.String(), i == len(raw)-1
		case '\\':
			i++
			if i == len(raw) || (raw[i] != '"' && raw[i] != '\\') {
				return "", false
			}
			b.WriteByte(raw[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

// fingerprint is the hex SHA-256 of the route and the request's parameters
// in canonical JSON (keys sorted, no insignificant space, numbers as
// written). It leaves out what a faithful retry may change: the JSON-RPC
// envelope (its id), _meta, unknown members, spacing and member order.
func fingerprint(route string, p *createParams) string {
	stripped := *p
	stripped.Meta = nil
	stripped.key = requestKey{}
	data, err := json.Marshal(&stripped)
	if err == nil {
		data, err = canonicalJSON(data)
	}
	if err != nil {
		// Parsed from JSON, so it encodes; if not, no retry can match.
		data = []byte(err.Error())
	}
	sum := sha256.Sum256(append([]byte(route+"\n"), data...))
	return hex.EncodeToString(sum[:])
}

// canonicalJSON re-encodes data with every object's members sorted.
func canonicalJSON(data []byte) ([]byte, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
