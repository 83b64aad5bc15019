package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// FuzzDecodeAnswers feeds arbitrary bytes to the reply-body parser: it never
// panics, refuses with a 400 or returns exactly the string arrays the body holds.
func FuzzDecodeAnswers(f *testing.F) {
	for _, seed := range []string{
		`{"answers":[["SY215C"],["Black smoke","Low power"]]}`,
		`{"answers":[]}`, `{"answers":[[]]}`, `{}`, ``, `{"answers":"x"}`, `{"answers":["x"]}`,
		`{"answers":[[1]]}`, `{"answers":[[null]]}`, `{"answers":null}`, `{not json`, `[]`, `"answers"`,
		`{"answers":[["\u0000"]],"extra":1}`, `{"answers":[["a"]],"answers":[["b"]]}`, ` {"answers":[[" "]]} `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		answers, err := decodeAnswers(body)
		if err != nil {
			var bad *wire.BadRequest
			if !errors.As(err, &bad) || bad.Kind != wire.KindPayload || bad.Message == "" {
				t.Fatalf("error %v is not a 400 Payload", err)
			}
			return
		}
		var want struct {
			Answers [][]string `json:"answers"`
		}
		if json.Unmarshal(body, &want) != nil {
			t.Fatalf("accepted %q, which encoding/json refuses", body)
		}
		if len(want.Answers) != len(answers) {
			t.Fatalf("decoded %d answers from %q, encoding/json finds %d", len(answers), body, len(want.Answers))
		}
		for i := range answers {
			if strings.Join(answers[i], "\x00") != strings.Join(want.Answers[i], "\x00") || answers[i] == nil {
				t.Fatalf("answer %d: %q, want %q", i, answers[i], want.Answers[i])
			}
		}
	})
}

// FuzzParseCreateBody feeds arbitrary bytes to the elicitation-request
// parser: it never panics, and every refusal is a 400 or a JSON-RPC error.
func FuzzParseCreateBody(f *testing.F) {
	for _, seed := range []string{
		`{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		`{"method":"elicitation/create","params":{"message":"m","requestedSchema":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"1.0","id":1,"method":"elicitation/create"}`,
		`{"method":"x"}`, `{"method":"elicitation/create","params":7}`, `{"message":1}`, `{"timeout":{}}`,
		`{"tool":"x"}`, `{"tool":{"messageID":1}}`, `[]`, ``, `{`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		params, _, err := parseCreateBody(body)
		if err != nil {
			var bad *wire.BadRequest
			var rpc *rpcError
			if !errors.As(err, &bad) && !errors.As(err, &rpc) {
				t.Fatalf("error %v (%T) is neither a 400 nor a JSON-RPC error", err, err)
			}
			return
		}
		if params == nil {
			t.Fatal("no error and no params")
		}
	})
}
