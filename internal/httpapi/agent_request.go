package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/duration"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// createParams is the body of POST /elicitations and POST /elicit: the params
// of MCP's elicitation/create, plus questiond's routing fields.
type createParams struct {
	Message         *string          `json:"message"`
	RequestedSchema json.RawMessage  `json:"requestedSchema"`
	Mode            string           `json:"mode"`
	Meta            json.RawMessage  `json:"_meta"`
	SessionID       string           `json:"sessionID"`
	Title           string           `json:"title,omitempty"` // omitempty: an untitled request's fingerprint stays what it was
	Directory       string           `json:"directory"`
	Timeout         json.RawMessage  `json:"timeout"`
	Tool            *pending.Tool    `json:"tool"`
	MCPTool         *pending.MCPTool `json:"mcpTool,omitempty"` // omitempty: the fingerprint of a request without one stays what it was

	key     requestKey   // from the Idempotency-Key header, not the body
	client  string       // the MCP client that asks (see pending.Question.Client), not from the body
	form    *elicit.Form // Message and RequestedSchema parsed already (the question tools'), nil: createAs parses them
	unknown []string     // keys of the params that are none of createFields, sorted
}

// rpcRequest is a JSON-RPC 2.0 request, or the {"method","params"} wrapper
// MCP uses for input requests.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

const methodElicitationCreate = "elicitation/create"

// rpcError is a JSON-RPC error that is answered as such when the caller spoke
// JSON-RPC, and as a 400 otherwise.
type rpcError struct {
	code    int
	message string
}

func (e *rpcError) Error() string { return e.message }

// parseCreateBody reads an elicitation request in any of its accepted forms:
// bare params, {"method":"elicitation/create","params":…}, or a JSON-RPC 2.0
// request. rpc is non-nil when the caller sent a JSON-RPC request.
func parseCreateBody(body []byte) (params *createParams, rpc *rpcRequest, err error) {
	members, err := decodeObject(body)
	if err != nil {
		return nil, nil, err
	}
	raw, prefix := body, ""
	if _, wrapped := members["method"]; wrapped {
		var envelope rpcRequest
		if err := json.Unmarshal(body, &envelope); err != nil {
			return nil, nil, typeError(err, "")
		}
		if envelope.JSONRPC != "" {
			rpc = &envelope
			if envelope.JSONRPC != "2.0" || len(envelope.ID) == 0 || string(envelope.ID) == "null" {
				return nil, rpc, &rpcError{wire.RPCInvalidRequest, `a JSON-RPC request needs "jsonrpc":"2.0" and an id`}
			}
			if !isRPCID(envelope.ID) {
				bad := *rpc
				bad.ID = nil // answered with a null id: this one cannot be echoed
				return nil, &bad, &rpcError{wire.RPCInvalidRequest, fmt.Sprintf("a JSON-RPC id is a string or a number, not %s", excerpt(envelope.ID))}
			}
		}
		if envelope.Method != methodElicitationCreate {
			return nil, rpc, &rpcError{wire.RPCMethodNotFound, fmt.Sprintf("method %q is not supported; questiond serves %q", envelope.Method, methodElicitationCreate)}
		}
		raw, prefix = envelope.Params, `["params"]`
		if len(raw) == 0 || strings.TrimSpace(string(raw))[0] != '{' {
			return nil, rpc, wire.NewBadRequest(wire.KindPayload, "Expected object, got %s\n  at [\"params\"]", orUndefined(raw))
		}
		if err := refuseDuplicateKeys(raw, prefix); err != nil {
			return nil, rpc, err
		}
	}
	var p createParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, rpc, typeError(err, prefix)
	}
	if p.unknown, err = checkNearMisses(raw, prefix); err != nil {
		return nil, rpc, err
	}
	return &p, rpc, nil
}

// createFields are the keys of createParams. Any other key is let through
// (MCP adds params over time), unless it is a near miss of one of these: a
// misspelled "timout" would otherwise be ignored, and the question would
// wait the default hour.
var createFields = []string{"message", "requestedSchema", "mode", "_meta", "sessionID", "title", "directory", "timeout", "tool", "mcpTool"}

// checkNearMisses refuses a key of the params object raw that is not one of
// createFields but is within two edits of one (or differs only in case). It
// returns the other unknown keys, which are let through.
func checkNearMisses(raw json.RawMessage, prefix string) (unknown []string, err error) {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return nil, nil // not an object: the decoding above said so already
	}
	keys := make([]string, 0, len(members))
	for key := range members {
		keys = append(keys, key)
	}
	slices.Sort(keys) // the same request gets the same answer
	for _, key := range keys {
		if slices.Contains(createFields, key) {
			continue
		}
		for _, field := range createFields {
			// Short fields (mode, tool, _meta) only by letter case: two edits
			// from "tool" is half the word, and "tools" may be MCP's one day.
			if strings.EqualFold(key, field) || (len(field) >= 7 && editDistance(key, field) <= 2) {
				return nil, wire.NewBadRequest(wire.KindPayload, "unknown key %q: did you mean %q?\n  at %s[%q]", key, field, prefix, key)
			}
		}
		unknown = append(unknown, key)
	}
	return unknown, nil
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// isRPCID reports whether raw is an id JSON-RPC 2.0 lets a request carry
// and questiond echoes: a string or a number (null is refused before).
func isRPCID(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && (s[0] == '"' || s[0] == '-' || s[0] >= '0' && s[0] <= '9')
}

func orUndefined(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "undefined"
	}
	return excerpt(raw)
}

// typeError turns a JSON type mismatch into a message naming the field.
func typeError(err error, prefix string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		path := prefix
		for _, part := range strings.Split(te.Field, ".") {
			if part != "" {
				path += fmt.Sprintf("[%q]", part)
			}
		}
		return wire.NewBadRequest(wire.KindPayload, "Expected %s, got %s\n  at %s", jsonTypeName(te.Type.Kind().String()), te.Value, path)
	}
	return wire.NewBadRequest(wire.KindPayload, "Invalid JSON: %v", err)
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "ptr", "struct", "map":
		return "object"
	case "slice":
		return "array"
	}
	return goKind
}

// maxTitleRunes bounds a create request's title: a session list's line.
const maxTitleRunes = 200

// validated is a create request that passed every check.
type validated struct {
	message   string
	schema    json.RawMessage
	sessionID string
	title     string
	directory string
	timeout   time.Duration
	tool      *pending.Tool
	mcpTool   *pending.MCPTool
}

// validate checks the fields elicit does not: everything but the schema.
func (s *Server) validate(p *createParams) (*validated, error) {
	switch p.Mode {
	case "", "form":
	case "url":
		return nil, wire.NewBadRequest(wire.KindPayload, "mode \"url\" is not supported: questiond asks operators form-mode questions only\n  at [\"mode\"]")
	default:
		return nil, wire.NewBadRequest(wire.KindPayload, "Expected \"form\", got %q\n  at [\"mode\"]", p.Mode)
	}
	if p.Message == nil {
		return nil, wire.NewBadRequest(wire.KindPayload, "Missing key\n  at [\"message\"]")
	}
	if strings.TrimSpace(*p.Message) == "" {
		return nil, wire.NewBadRequest(wire.KindPayload, "message must not be empty\n  at [\"message\"]")
	}
	if len(p.RequestedSchema) == 0 || string(p.RequestedSchema) == "null" {
		return nil, wire.NewBadRequest(wire.KindPayload, "Missing key: form-mode elicitations need a requestedSchema\n  at [\"requestedSchema\"]")
	}
	v := &validated{message: *p.Message, schema: p.RequestedSchema, sessionID: p.SessionID, tool: p.Tool}
	if v.sessionID != "" && !session.ValidID(v.sessionID) {
		return nil, wire.NewBadRequest(wire.KindPayload, "Expected a session id like \"ses_…\" (letters, digits, _ or -, at most 104 characters), got %q\n  at [\"sessionID\"]", v.sessionID)
	}
	if n := utf8.RuneCountInString(p.Title); n > maxTitleRunes {
		return nil, wire.NewBadRequest(wire.KindPayload, "title is %d characters long; at most %d\n  at [\"title\"]", n, maxTitleRunes)
	}
	v.title = p.Title
	if p.Directory != "" {
		dir, err := wire.NormalizeDirectory(p.Directory)
		if err != nil {
			return nil, wire.NewBadRequest(wire.KindPayload, "%v\n  at [\"directory\"]", err)
		}
		v.directory = dir
	}
	if p.Tool != nil {
		if !strings.HasPrefix(p.Tool.MessageID, "msg") {
			return nil, wire.NewBadRequest(wire.KindPayload, "Expected a string starting with \"msg\", got %q\n  at [\"tool\"][\"messageID\"]", p.Tool.MessageID)
		}
		if p.Tool.CallID == "" {
			return nil, wire.NewBadRequest(wire.KindPayload, "callID must not be empty\n  at [\"tool\"][\"callID\"]")
		}
	}
	if p.MCPTool != nil {
		if err := checkMCPTool(p.MCPTool); err != nil {
			return nil, err
		}
		v.mcpTool = p.MCPTool
	}
	timeout, err := s.parseTimeout(p.Timeout)
	if err != nil {
		return nil, err
	}
	v.timeout = timeout
	return v, nil
}

// maxMCPToolRunes bounds each name of mcpTool: MCP tool names have at most
// 128 characters, and a host's server names are config keys.
const maxMCPToolRunes = 128

// checkMCPTool checks the bridged tool call a request names.
func checkMCPTool(t *pending.MCPTool) error {
	for _, f := range []struct{ key, value string }{{"server", t.Server}, {"name", t.Name}} {
		switch n := utf8.RuneCountInString(f.value); {
		case strings.TrimSpace(f.value) == "":
			return wire.NewBadRequest(wire.KindPayload, "%s must not be empty\n  at [\"mcpTool\"][%q]", f.key, f.key)
		case n > maxMCPToolRunes:
			return wire.NewBadRequest(wire.KindPayload, "%s is %d characters long; at most %d\n  at [\"mcpTool\"][%q]", f.key, n, maxMCPToolRunes, f.key)
		case strings.ContainsFunc(f.value, unicode.IsControl):
			return wire.NewBadRequest(wire.KindPayload, "%s must not contain control characters\n  at [\"mcpTool\"][%q]", f.key, f.key)
		}
	}
	return nil
}

// parseTimeout reads "timeout": a Go duration string ("90s", "1h30m") or a
// number of seconds. It must be positive and at most MaxTimeout.
func (s *Server) parseTimeout(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return s.opts.DefaultTimeout, nil
	}
	var d time.Duration
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		parsed, perr := time.ParseDuration(strings.TrimSpace(text))
		if perr != nil {
			return 0, wire.NewBadRequest(wire.KindPayload, "Expected a duration such as \"90s\" or \"1h\", got %q\n  at [\"timeout\"]", text)
		}
		d = parsed
	} else {
		// A number: of seconds, within what a Duration holds (the range
		// is checked below, as for a string).
		seconds, err := duration.Parse(string(raw), duration.Longest)
		if err != nil {
			return 0, wire.NewBadRequest(wire.KindPayload, "Expected a duration string or a number of seconds, got %s\n  at [\"timeout\"]", excerpt(raw))
		}
		d = seconds
	}
	if d <= 0 {
		return 0, wire.NewBadRequest(wire.KindPayload, "timeout must be positive, got %s\n  at [\"timeout\"]", excerpt(raw))
	}
	if d > s.opts.MaxTimeout {
		return 0, wire.NewBadRequest(wire.KindPayload, "timeout %s is longer than the maximum %s\n  at [\"timeout\"]", d, s.opts.MaxTimeout)
	}
	return d, nil
}
