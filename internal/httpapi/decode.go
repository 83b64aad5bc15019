package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// readJSONBody reads a request body that must be JSON. Like OpenCode, a body
// without a Content-Type is taken as JSON, and any other declared type is a 415.
// The body is limited to limit bytes (413 beyond).
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return nil, &wire.UnsupportedMediaType{ContentType: ct}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, err
		}
		return nil, wire.NewBadRequest(wire.KindPayload, "could not read the request body: %v", err)
	}
	return body, nil
}

// elicitationExample is the shape an elicitation's body takes, for messages.
const elicitationExample = `{"message":"…","requestedSchema":{"type":"object","properties":{…}}}`

// readOwnJSONBody is readJSONBody for questiond's own routes, whose errors
// say what to send: a form type gets the header to use (see wire.OnOwnRoute), and
// an empty body an example of the object wanted. A body whose object repeats
// a key is refused, as the schemas inside it are; OpenCode's own routes keep
// OpenCode's behaviour (the last of repeated keys wins).
func readOwnJSONBody(w http.ResponseWriter, r *http.Request, limit int64, example string) ([]byte, error) {
	body, err := readJSONBody(w, r, limit)
	if err != nil {
		return nil, wire.OnOwnRoute(err)
	}
	if strings.TrimSpace(string(body)) == "" {
		return nil, wire.NewBadRequest(wire.KindPayload, "the request body is empty: send a JSON object, like %s", example)
	}
	if err := refuseDuplicateKeys(body, ""); err != nil {
		return nil, err
	}
	return body, nil
}

// decodeObject parses body as one JSON object and returns its members. The
// messages follow OpenCode's wording ("Expected object, got …").
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	trimmed := strings.TrimSpace(string(body))
	if trimmed == "" {
		return nil, wire.NewBadRequest(wire.KindPayload, "Expected object, got undefined")
	}
	if !json.Valid([]byte(trimmed)) {
		return nil, wire.NewBadRequest(wire.KindPayload, "Invalid JSON: %s", syntaxProblem(body))
	}
	if trimmed[0] != '{' {
		return nil, wire.NewBadRequest(wire.KindPayload, "Expected object, got %s", excerpt(json.RawMessage(trimmed)))
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(trimmed), &members); err != nil {
		return nil, wire.NewBadRequest(wire.KindPayload, "Invalid JSON: %v", err)
	}
	return members, nil
}

// syntaxProblem describes why body is not valid JSON, with the byte offset.
func syntaxProblem(body []byte) string {
	var v any
	err := json.Unmarshal(body, &v)
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Sprintf("%v (at byte %d)", syntax, syntax.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "not a single JSON value"
}

// decodeAnswers reads OpenCode's reply body {"answers": string[][]}.
func decodeAnswers(body []byte) ([][]string, error) {
	members, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	raw, ok := members["answers"]
	if !ok {
		return nil, wire.NewBadRequest(wire.KindPayload, "Missing key\n  at [\"answers\"]")
	}
	var list []json.RawMessage
	if !isArray(raw) || json.Unmarshal(raw, &list) != nil {
		return nil, wire.NewBadRequest(wire.KindPayload, "Expected array, got %s\n  at [\"answers\"]", excerpt(raw))
	}
	answers := make([][]string, len(list))
	for i, item := range list {
		var picks []json.RawMessage
		if !isArray(item) || json.Unmarshal(item, &picks) != nil {
			return nil, wire.NewBadRequest(wire.KindPayload, "Expected QuestionAnswer, got %s\n  at [\"answers\"][%d]", excerpt(item), i)
		}
		answers[i] = make([]string, len(picks))
		for j, pick := range picks {
			if len(pick) == 0 || pick[0] != '"' || json.Unmarshal(pick, &answers[i][j]) != nil {
				return nil, wire.NewBadRequest(wire.KindPayload, "Expected string, got %s\n  at [\"answers\"][%d][%d]", excerpt(pick), i, j)
			}
		}
	}
	return answers, nil
}

func isArray(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s[0] == '['
}

// excerpt renders a JSON value for an error message, cut to a readable length.
func excerpt(raw json.RawMessage) string {
	const max = 60
	s := strings.TrimSpace(string(raw))
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}
