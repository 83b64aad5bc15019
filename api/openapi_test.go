package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/questiond/questiond/api"

	"github.com/questiond/questiond/internal/testenv"
)

// loadDoc loads and validates the document exactly as GET /doc serves it.
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	loader.Context = t.Context()
	doc, err := loader.LoadFromData(api.JSON())
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	// Validate switches to OpenAPI 3.1 rules (JSON Schema 2020-12) by itself
	// because the document says openapi: 3.1.0; examples are validated too.
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return doc
}

// rawDoc is the served document as plain JSON values, for comparing schemas
// with OpenCode's recorded ones.
func rawDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(api.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// goldenDoc is OpenCode's own document, recorded from a real server. It lives
// in shared/, beside the repository root: /work/shared next to /work/main
// here, and a copy beside the clone in CI.
func goldenDoc(t *testing.T) map[string]any {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "..", "shared", "golden", "opencode-openapi.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		testenv.Missing(t, "the recorded OpenCode document "+path, "check out shared/ beside the repository")
	}
	if err != nil {
		t.Fatalf("the recorded OpenCode document is required: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

// repoRoot is the nearest directory above the working directory (the package
// directory under go test) that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// at walks a JSON value by object keys.
func at(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for i, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s is not an object", strings.Join(keys[:i], "."))
		}
		if v, ok = m[k]; !ok {
			t.Fatalf("no %s", strings.Join(keys[:i+1], "."))
		}
	}
	return v
}

// deref follows a local "$ref" at the top of v (and of what it points to).
func deref(t *testing.T, doc map[string]any, v any) any {
	t.Helper()
	for range 10 {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		v = at(t, doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
	}
	t.Fatal("$ref chain too long")
	return nil
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s differs from OpenCode's\n got: %s\nwant: %s", what, g, w)
	}
}

func TestDocumentLoadsAndValidates(t *testing.T) {
	doc := loadDoc(t)
	if !doc.IsOpenAPI31OrLater() || doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if doc.Info.Title != "questiond" {
		t.Errorf("info.title = %q", doc.Info.Title)
	}
}

// TestDocumentHasEveryRoute pins the route table of the HTTP design: a route
// added to or dropped from the document must be a decision.
func TestDocumentHasEveryRoute(t *testing.T) {
	want := []string{
		"DELETE /elicitations/{id}",
		"DELETE /mcp",
		"DELETE /sessions/{sessionID}",
		"GET /",
		"GET /agent",
		"GET /config",
		"GET /config/providers",
		"GET /doc",
		"GET /elicitations/{id}",
		"GET /event",
		"GET /events",
		"GET /global/event",
		"GET /global/health",
		"GET /mcp",
		"GET /provider",
		"GET /question",
		"GET /questiond/question/{requestID}/form",
		"GET /readyz",
		"GET /session",
		"GET /session/status",
		"GET /session/{sessionID}",
		"GET /session/{sessionID}/message",
		"GET /sessions/{sessionID}",
		"GET /ui",
		"GET /ui/{file}",
		"HEAD /global/health",
		"HEAD /readyz",
		"POST /elicit",
		"POST /elicitations",
		"POST /mcp",
		"POST /question/{requestID}/reject",
		"POST /question/{requestID}/reply",
		"POST /session",
		"POST /session/{sessionID}/message",
		"PUT /sessions/{sessionID}",
	}
	var got []string
	for path, item := range loadDoc(t).Paths.Map() {
		for method := range item.Operations() {
			got = append(got, method+" "+path)
		}
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("routes:\n got %q\nwant %q", got, want)
	}
}

func TestEveryOperationHasAnOperationID(t *testing.T) {
	seen := map[string]string{}
	for path, item := range loadDoc(t).Paths.Map() {
		for method, op := range item.Operations() {
			route := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", route)
			}
			if other, dup := seen[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %q", route, other, op.OperationID)
			}
			seen[op.OperationID] = route
		}
	}
}

// TestEveryErrorResponseRefersToAnErrorSchema: each 4xx/5xx response, in
// every media type it has, is a $ref to a component schema named *Error. The
// one response without a body is a challenge: OpenCode's 401, whose body is
// empty, says what to send in WWW-Authenticate instead.
func TestEveryErrorResponseRefersToAnErrorSchema(t *testing.T) {
	doc := loadDoc(t)
	isErrorSchema := func(ref string) bool {
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		return ok && strings.HasSuffix(name, "Error") && doc.Components.Schemas[name] != nil
	}
	check := func(where, status string, resp *openapi3.ResponseRef) {
		if status[0] != '4' && status[0] != '5' {
			return
		}
		if resp.Value == nil {
			t.Errorf("%s %s: not resolved", where, status)
			return
		}
		if len(resp.Value.Content) == 0 {
			if challenge := resp.Value.Headers["WWW-Authenticate"]; challenge == nil || !challenge.Value.Required {
				t.Errorf("%s %s: no body described, and no challenge either", where, status)
			}
			return
		}
		for mediaType, content := range resp.Value.Content {
			if content.Schema == nil || !isErrorSchema(content.Schema.Ref) {
				t.Errorf("%s %s %s: schema is not a $ref to an error schema", where, status, mediaType)
			}
		}
	}
	errorResponses := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				check(method+" "+path, status, resp)
				if status[0] == '4' || status[0] == '5' {
					errorResponses++
				}
			}
		}
	}
	for name, resp := range doc.Components.Responses {
		// Component responses have no status of their own; their names say it.
		if name != "EventStream" {
			check("components.responses."+name, "4xx", resp)
		}
	}
	if errorResponses < 30 {
		t.Errorf("only %d error responses found; is the walk broken?", errorResponses)
	}
}

// TestOpenCodeSchemasAreReusedExactly compares our OpenCode-compatible parts
// with the document a real OpenCode server serves, as decoded JSON values (so
// key order and layout do not count). What is normalised, and only where said:
// our document names two inline OpenCode bodies (Health, QuestionReply) as
// components, so a top-level $ref is followed before comparing; OpenCode's
// GlobalEvent inlines its event shapes where ours refers to them.
func TestOpenCodeSchemasAreReusedExactly(t *testing.T) {
	ours, theirs := rawDoc(t), goldenDoc(t)
	for _, name := range []string{
		"QuestionOption", "QuestionInfo", "QuestionTool", "QuestionRequest", "QuestionAnswer",
		"QuestionNotFoundError", "BadRequestError", "NotFoundError", "UnknownError",
		"EventServerConnected", "EventQuestionAsked", "EventQuestionReplied", "EventQuestionRejected",
	} {
		sameJSON(t, name,
			at(t, ours, "components", "schemas", name),
			at(t, theirs, "components", "schemas", name))
	}
}

// TestOpenCodeEventsAreASubset: our Event union is part of OpenCode's, plus
// server.heartbeat, which OpenCode sends but does not document.
func TestOpenCodeEventsAreASubset(t *testing.T) {
	ours, theirs := rawDoc(t), goldenDoc(t)
	theirRefs := at(t, theirs, "components", "schemas", "Event", "anyOf").([]any)
	ourRefs := at(t, ours, "components", "schemas", "Event", "anyOf").([]any)
	for _, ref := range ourRefs {
		if at(t, ref, "$ref") == "#/components/schemas/EventServerHeartbeat" || consoleEvents[at(t, ref, "$ref").(string)] {
			continue
		}
		if !slices.ContainsFunc(theirRefs, func(r any) bool { return reflect.DeepEqual(r, ref) }) {
			t.Errorf("Event member %v is not in OpenCode's Event", ref)
		}
	}

	// GlobalEvent: the same envelope fields; the payload is one of OpenCode's
	// inlined event shapes. Only "required" differs, on purpose: OpenCode's
	// document requires "directory", but neither server sends it with
	// server.connected or server.heartbeat.
	ourGlobal := at(t, ours, "components", "schemas", "GlobalEvent").(map[string]any)
	theirGlobal := at(t, theirs, "components", "schemas", "GlobalEvent").(map[string]any)
	for _, field := range []string{"directory", "project", "workspace"} {
		sameJSON(t, "GlobalEvent."+field,
			at(t, ourGlobal, "properties", field), at(t, theirGlobal, "properties", field))
	}
	sameJSON(t, "GlobalEvent.additionalProperties", ourGlobal["additionalProperties"], theirGlobal["additionalProperties"])
	sameJSON(t, "GlobalEvent.required", ourGlobal["required"], []any{"payload"})
	theirPayloads := at(t, theirGlobal, "properties", "payload", "anyOf").([]any)
	payloadEvent := deref(t, ours, at(t, ourGlobal, "properties", "payload"))
	for _, ref := range at(t, payloadEvent, "anyOf").([]any) {
		if at(t, ref, "$ref") == "#/components/schemas/EventServerHeartbeat" || consoleEvents[at(t, ref, "$ref").(string)] {
			continue
		}
		event := deref(t, ours, ref)
		if !slices.ContainsFunc(theirPayloads, func(p any) bool { return reflect.DeepEqual(p, event) }) {
			t.Errorf("GlobalEvent payload %v is not among OpenCode's", ref)
		}
	}
}

// TestOpenCodeOperationsMatch compares the OpenCode-compatible operations:
// same path, method and operationId, every OpenCode parameter present with the
// same schema, the same success body and the same 404 body. The 400 bodies
// differ on purpose: OpenCode's document lists {"_tag":…} shapes for reply and
// reject, but its server sends BadRequestError, and so do we.
func TestOpenCodeOperationsMatch(t *testing.T) {
	ours, theirs := rawDoc(t), goldenDoc(t)
	operations := []struct{ path, method, id string }{
		{"/question", "get", "question.list"},
		{"/question/{requestID}/reply", "post", "question.reply"},
		{"/question/{requestID}/reject", "post", "question.reject"},
		{"/event", "get", "event.subscribe"},
		{"/global/event", "get", "global.event"},
		{"/global/health", "get", "global.health"},
	}
	for _, o := range operations {
		t.Run(o.id, func(t *testing.T) {
			ourOp := at(t, ours, "paths", o.path, o.method).(map[string]any)
			theirOp := at(t, theirs, "paths", o.path, o.method).(map[string]any)
			if ourOp["operationId"] != o.id || theirOp["operationId"] != o.id {
				t.Errorf("operationId: ours %v, OpenCode's %v, want %s", ourOp["operationId"], theirOp["operationId"], o.id)
			}

			var ourParams []any
			if ps, ok := ourOp["parameters"].([]any); ok {
				for _, p := range ps {
					ourParams = append(ourParams, deref(t, ours, p))
				}
			}
			theirParams, _ := theirOp["parameters"].([]any)
			for _, p := range theirParams {
				if !slices.ContainsFunc(ourParams, func(q any) bool { return reflect.DeepEqual(q, p) }) {
					g, _ := json.Marshal(p)
					t.Errorf("parameter %s is missing or differs", g)
				}
			}

			compareBody := func(what string, ourContent, theirContent any) {
				theirMap := theirContent.(map[string]any)
				ourMap := ourContent.(map[string]any)
				if len(ourMap) != len(theirMap) {
					t.Errorf("%s: media types %v, OpenCode's %v", what, keys(ourMap), keys(theirMap))
				}
				for mediaType, theirMedia := range theirMap {
					theirSchema := at(t, theirMedia, "schema")
					ourSchema := at(t, ourMap, mediaType, "schema")
					_, isRef := theirSchema.(map[string]any)["$ref"]
					if !isRef {
						ourSchema = deref(t, ours, ourSchema)
					}
					// Where questiond answers more than OpenCode on purpose (health
					// to a caller without credentials), OpenCode's body must be one
					// of its alternatives, exactly.
					if alternatives, ok := ourSchema.(map[string]any)["anyOf"].([]any); ok && !isRef {
						if !slices.ContainsFunc(alternatives, func(a any) bool { return reflect.DeepEqual(deref(t, ours, a), theirSchema) }) {
							sameJSON(t, what+" "+mediaType+" (no alternative)", ourSchema, theirSchema)
						}
						continue
					}
					sameJSON(t, what+" "+mediaType, ourSchema, theirSchema)
				}
			}
			for _, status := range []string{"200", "404"} {
				theirResp, ok := at(t, theirOp, "responses").(map[string]any)[status]
				if !ok {
					continue
				}
				ourResp := deref(t, ours, at(t, ourOp, "responses", status))
				compareBody(status+" body", at(t, ourResp, "content"), at(t, theirResp, "content"))
			}
			if theirBody, ok := theirOp["requestBody"]; ok {
				compareBody("request body", at(t, ourOp, "requestBody", "content"), at(t, theirBody, "content"))
			}
		})
	}
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestSchemasAcceptTheWire checks the schemas against bodies copied from the
// design and from OpenCode's recordings, and against near misses, so a
// schema that accepts everything (or nothing) cannot pass.
func TestSchemasAcceptTheWire(t *testing.T) {
	doc := loadDoc(t)
	tests := []struct {
		schema string
		body   string
		valid  bool
	}{
		{"QuestionRequest", `{"id":"que_1","sessionID":"ses_1","questions":[{"question":"Q?","header":"H","options":[{"label":"a","description":"b"}],"multiple":true}],"tool":{"messageID":"msg_1","callID":"c"}}`, true},
		{"QuestionRequest", `{"id":"abc","sessionID":"ses_1","questions":[]}`, false},
		{"QuestionRequest", `{"id":"que_1","sessionID":"ses_1","questions":null}`, false},
		{"BadRequestError", `{"name":"BadRequest","data":{"message":"Expected a string starting with \"que\", got \"abc\"\n  at [\"requestID\"]","kind":"Params"}}`, true},
		{"BadRequestError", `{"name":"BadRequest","data":{"message":"m","kind":"Nope"}}`, false},
		{"QuestionNotFoundError", `{"_tag":"QuestionNotFoundError","requestID":"que_1","message":"Question request not found: que_1"}`, true},
		{"UnknownError", `{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details.","ref":"err_0123abcd"}}`, true},
		{"UnsupportedMediaTypeError", `"Unsupported content-type: text/plain"`, true},
		{"UnsupportedMediaTypeError", `"nope"`, false},
		{"Event", `{"id":"evt_1","type":"server.connected","properties":{}}`, true},
		{"Event", `{"id":"evt_1","type":"server.heartbeat","properties":{}}`, true},
		{"Event", `{"id":"evt_1","type":"question.replied","properties":{"sessionID":"ses_1","requestID":"que_1","answers":[["a"],[]]}}`, true},
		{"Event", `{"id":"evt_1","type":"question.rejected","properties":{"sessionID":"ses_1","requestID":"que_1"}}`, true},
		{"Event", `{"id":"evt_1","type":"question.rejected","properties":{"sessionID":"ses_1"}}`, false},
		{"Event", `{"id":"evt_1","type":"session.idle","properties":{}}`, false},
		{"GlobalEvent", `{"payload":{"id":"evt_1","type":"server.connected","properties":{}}}`, true},
		{"GlobalEvent", `{"directory":"/p","project":"global","payload":{"id":"evt_1","type":"question.rejected","properties":{"sessionID":"ses_1","requestID":"que_1"}}}`, true},
		{"GlobalEvent", `{"directory":"/p"}`, false},
		{"ElicitResult", `{"action":"accept","content":{"name":"api","replicas":2,"ratio":0.5,"dryRun":true,"tags":["web"]}}`, true},
		{"ElicitResult", `{"action":"decline"}`, true},
		{"ElicitResult", `{"action":"cancel","content":{}}`, false},
		{"ElicitResult", `{"action":"accept"}`, false},
		{"ElicitResult", `{"action":"accept","content":{"x":{"nested":1}}}`, false},
		{"Elicitation", `{"id":"que_1","status":"pending","sessionID":"ses_1","createdAt":"2026-11-29T20:58:43Z","deadline":"2026-11-29T21:00:13Z","questions":[]}`, true},
		{"Elicitation", `{"id":"que_1","status":"resolved","sessionID":"ses_1","createdAt":"2026-11-29T20:58:43Z","endedAt":"2026-11-29T20:59:00Z","ending":"withdrawn","result":{"action":"cancel"},"questions":[]}`, true},
		{"Elicitation", `{"id":"que_1","status":"resolved","sessionID":"ses_1","createdAt":"2026-11-29T20:58:43Z","questions":[]}`, false},
		{"Elicitation", `{"id":"que_1","status":"pending","sessionID":"ses_1","createdAt":"2026-11-29T20:58:43Z","ending":"timeout","questions":[]}`, false},
		{"ElicitBody", `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}},"timeout":"90s"}`, true},
		{"ElicitBody", `{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}}}}`, true},
		{"ElicitBody", `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}}}}`, true},
		{"ElicitBody", `{"message":"","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}}}`, false},
		{"ElicitBody", `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}},"timeout":"soon"}`, false},
		{"ElicitBody", `{"message":"m","mode":"url","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}}}`, false},
		{"ElicitBody", `{"message":"m","requestedSchema":{"type":"object","properties":{}}}`, false},
		{"ElicitBody", `{"message":" ","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}}}`, false},
		{"ElicitBody", `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}},"timeout":90}`, true},
		{"ElicitBody", `{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"boolean"}}},"timeout":0}`, false},
		{"AccessForbiddenError", `{"name":"Forbidden","data":{"message":"origin http://evil.example may not change questions; allow it with --cors"}}`, true},
		{"AccessForbiddenError", `{"name":"Forbidden","data":{"message":"Agent credentials cannot list, answer or watch questions; only an operator can."}}`, true},
		{"AccessForbiddenError", `{"name":"Unauthorized","data":{"message":"m"}}`, false},
		{"UnauthorizedError", `{"name":"Unauthorized","data":{"message":"Agent routes need Authorization: Bearer <token>; the token is not valid or missing."}}`, true},
		{"UnauthorizedError", `{"name":"Unauthorized","data":{}}`, false},
		{"UnauthorizedError", `{"name":"Forbidden","data":{"message":"m"}}`, false},
		{"MisdirectedRequestError", `{"name":"MisdirectedRequest","data":{"message":"Host attacker.example is not served here; add it with --allowed-hosts if it is a name of this server"}}`, true},
		{"MisdirectedRequestError", `{"name":"MisdirectedRequest","data":{"message":"m","kind":"Headers"}}`, false},
		{"TooManyRequestsError", `{"name":"TooManyRequests","data":{"message":"more than 60 requests in a minute from this client; slow down"}}`, true},
		{"TooManyRequestsError", `{"name":"TooManyRequests"}`, false},
		{"ElicitResponse", `{"action":"accept","content":{"a":"b"}}`, true},
		{"ElicitResponse", `{"jsonrpc":"2.0","id":"x","result":{"action":"cancel"}}`, true},
		{"ElicitResponse", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"requestedSchema: missing"}}`, true},
		{"ElicitResponse", `{"jsonrpc":"2.0","id":1}`, false},
		{"Elicitation", `{"id":"que_1","status":"pending","sessionID":"ses_root","askingSessionID":"ses_child","createdAt":"2026-11-29T20:58:43Z","questions":[]}`, true},
		{"Elicitation", `{"id":"que_1","status":"pending","sessionID":"ses_root","askingSessionID":"child","createdAt":"2026-11-29T20:58:43Z","questions":[]}`, false},
		{"SessionCapabilityRequest", `{"questionCapability":"parent","parentSessionID":"ses_root"}`, true},
		{"SessionCapabilityRequest", `{"questionCapability":"user","parentSessionID":"ses_root"}`, false},
		{"SessionCapabilityRequest", `{"questionCapability":"none"}`, true},
		{"SessionCapabilityRequest", `{"questionCapability":"parent"}`, false},
		{"SessionCapabilityRequest", `{"questionCapability":"none","parentSessionID":"ses_root"}`, false},
		{"SessionCapabilityRequest", `{"questionCapability":"everyone"}`, false},
		{"SessionCapabilityRequest", `{"questionCapability":"user","owner":"me"}`, false},
		{"SessionCapabilityRequest", `{"parentSessionID":"ses_root"}`, false},
		{"SessionCapability", `{"id":"ses_child","questionCapability":"parent","parentSessionID":"ses_root","configured":true}`, true},
		{"SessionCapability", `{"id":"ses_new","questionCapability":"user","configured":false}`, true},
		{"SessionCapability", `{"id":"ses_child","questionCapability":"parent","configured":true}`, false},
		{"SessionCapability", `{"id":"ses_member","questionCapability":"user","parentSessionID":"ses_root","configured":true}`, false},
		{"SessionCapability", `{"id":"ses_new","questionCapability":"user"}`, false},
		{"SessionCapability", `{"id":"ses_new","questionCapability":"user","parentSessionID":"ses_root","configured":false}`, false},
		{"MCPRequestBody", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true},
		{"MCPRequestBody", `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, true},
		{"MCPRequestBody", `{"id":1,"method":"tools/list"}`, false},
		{"MCPRequestBody", `[]`, false},
		{"MCPRequestError", `{"name":"BadRequest","data":{"message":"Expected a session id like \"ses_…\", got \"x\"\n  at [\"session\"]","kind":"Query"}}`, true},
		{"MCPRequestError", `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"protocol version \"2026-07-28\" is not supported by this server","data":{"supported":["2025-11-25"]}}}`, true},
		{"MCPRequestError", `{"jsonrpc":"2.0","id":3}`, false},
		{"MCPRequestError", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the body is empty; POST /mcp takes one JSON-RPC message"}}`, true},
		{"MCPRequestError", `{"jsonrpc":"2.0","id":true,"error":{"code":-32700,"message":"m"}}`, false},
		{"MCPTransportError", `"failed connection\n"`, true},
		{"MCPTransportError", `""`, false},
		{"Health", `{"healthy":true,"version":"1.2.3"}`, true},
		{"Health", `{"healthy":false,"version":"1.2.3"}`, false},
	}
	for _, tt := range tests {
		var value any
		if err := json.Unmarshal([]byte(tt.body), &value); err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		ref := doc.Components.Schemas[tt.schema]
		if ref == nil {
			t.Fatalf("no schema %s", tt.schema)
		}
		err := ref.Value.VisitJSON(value, openapi3.EnableJSONSchema2020())
		if (err == nil) != tt.valid {
			t.Errorf("%s %s: valid=%v, want %v (%v)", tt.schema, tt.body, err == nil, tt.valid, err)
		}
	}
}

// TestSecurityOfEveryOperation pins who may call what, and that every route
// documents how it refuses: operators' routes take Basic or auth_token,
// agents' a bearer token, health and the document either; every route may
// answer 401, 421 and 429, and the routes of one role 403 to the other.
func TestSecurityOfEveryOperation(t *testing.T) {
	doc := loadDoc(t)
	schemes := map[string]string{}
	for name, ref := range doc.Components.SecuritySchemes {
		s := ref.Value
		schemes[name] = strings.Join([]string{s.Type, s.Scheme, s.In, s.Name}, " ")
	}
	wantSchemes := map[string]string{
		"operatorBasic": "http basic  ",
		"operatorToken": "apiKey  query auth_token",
		"agentBearer":   "http bearer  ",
	}
	if !reflect.DeepEqual(schemes, wantSchemes) {
		t.Errorf("security schemes %q, want %q", schemes, wantSchemes)
	}
	if len(doc.Security) != 0 {
		t.Errorf("document-wide security %v: each operation says its own", doc.Security)
	}

	operator := [][]string{{"operatorBasic"}, {"operatorToken"}}
	agent := [][]string{{"agentBearer"}}
	either := [][]string{{"operatorBasic"}, {"operatorToken"}, {"agentBearer"}}
	anyone := append([][]string{nil}, either...) // probes: none, or either role's
	want := map[string]struct {
		security     [][]string
		unauthorized string
	}{
		"question.list":            {operator, "OperatorUnauthorized"},
		"question.form":            {operator, "OperatorUnauthorized"},
		"ui.redirect":              {operator, "OperatorUnauthorized"},
		"ui.page":                  {operator, "OperatorUnauthorized"},
		"ui.file":                  {operator, "OperatorUnauthorized"},
		"config.get":               {operator, "OperatorUnauthorized"},
		"config.providers":         {operator, "OperatorUnauthorized"},
		"provider.list":            {operator, "OperatorUnauthorized"},
		"app.agents":               {operator, "OperatorUnauthorized"},
		"session.list":             {operator, "OperatorUnauthorized"},
		"session.create":           {operator, "OperatorUnauthorized"},
		"session.status":           {operator, "OperatorUnauthorized"},
		"session.get":              {operator, "OperatorUnauthorized"},
		"session.messages":         {operator, "OperatorUnauthorized"},
		"session.prompt":           {operator, "OperatorUnauthorized"},
		"question.reply":           {operator, "OperatorUnauthorized"},
		"question.reject":          {operator, "OperatorUnauthorized"},
		"event.subscribe":          {operator, "OperatorUnauthorized"},
		"event.subscribeAlias":     {operator, "OperatorUnauthorized"},
		"global.event":             {operator, "OperatorUnauthorized"},
		"global.health":            {anyone, "OperatorUnauthorized"},
		"global.healthHead":        {anyone, "OperatorUnauthorized"},
		"doc.get":                  {either, "OperatorUnauthorized"},
		"elicitation.create":       {agent, "AgentUnauthorized"},
		"elicitation.get":          {agent, "AgentUnauthorized"},
		"elicitation.withdraw":     {agent, "AgentUnauthorized"},
		"elicitation.elicit":       {agent, "AgentUnauthorized"},
		"elicitation.sessionSet":   {[][]string{{"agentBearer"}, {"operatorBasic"}}, "AgentUnauthorized"}, // operators may change any session
		"elicitation.sessionGet":   {[][]string{{"agentBearer"}, {"operatorBasic"}}, "AgentUnauthorized"}, // operators may change any session
		"elicitation.sessionReset": {[][]string{{"agentBearer"}, {"operatorBasic"}}, "AgentUnauthorized"}, // operators may change any session
		"elicitation.mcpPost":      {agent, "AgentUnauthorized"},
		"elicitation.mcpStream":    {[][]string{{"agentBearer"}, {"operatorBasic"}}, "AgentUnauthorized"}, // and OpenCode's MCP status
		"elicitation.mcpEnd":       {agent, "AgentUnauthorized"},
		"ready.get":                {[][]string{nil}, ""}, // probes: anyone, credentials ignored, never 401
		"ready.head":               {[][]string{nil}, ""},
	}
	raw := rawDoc(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			w, ok := want[op.OperationID]
			if !ok {
				t.Errorf("%s %s (%s): no security expected for it; add it here", method, path, op.OperationID)
				continue
			}
			var got [][]string
			if op.Security != nil {
				for _, requirement := range *op.Security {
					var names []string
					for name, scopes := range requirement {
						names = append(names, name)
						if len(scopes) != 0 {
							t.Errorf("%s: scopes %v on %s", op.OperationID, scopes, name)
						}
					}
					sort.Strings(names)
					got = append(got, names)
				}
			}
			if !reflect.DeepEqual(got, w.security) {
				t.Errorf("%s: security %v, want %v", op.OperationID, got, w.security)
			}

			responses := at(t, raw, "paths", path, strings.ToLower(method), "responses").(map[string]any)
			ref := func(status string) string {
				r, _ := responses[status].(map[string]any)
				s, _ := r["$ref"].(string)
				return strings.TrimPrefix(s, "#/components/responses/")
			}
			wantRefs := map[string]string{"401": w.unauthorized, "421": "MisdirectedRequest", "429": "TooManyRequests"}
			probe := op.OperationID == "global.health" || op.OperationID == "global.healthHead"
			readiness := strings.HasPrefix(op.OperationID, "ready.")
			if readiness {
				wantRefs["429"] = "" // probes do not count against the rate limit
			}
			// GET /sessions/{id} is for either role and changes nothing: no 403.
			if !probe && !readiness && op.OperationID != "doc.get" && op.OperationID != "elicitation.sessionGet" {
				wantRefs["403"] = "Forbidden"
			}
			for status, name := range wantRefs {
				if got := ref(status); got != name {
					t.Errorf("%s %s: response %q, want %q", op.OperationID, status, got, name)
				}
			}
			if strings.HasSuffix(op.OperationID, "vent") || strings.HasPrefix(op.OperationID, "event.") {
				if got := ref("503"); got != "ServiceUnavailable" {
					t.Errorf("%s 503: response %q, want ServiceUnavailable (the stream limit)", op.OperationID, got)
				}
			}
		}
	}
}

func TestValidationIsNotVacuous(t *testing.T) {
	// Guards the tests above against a loader that silently accepts anything.
	loader := openapi3.NewLoader()
	broken, err := loader.LoadFromData([]byte(`{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Missing"}}}}}}}}}`))
	if err == nil {
		err = broken.Validate(context.Background())
	}
	if err == nil {
		t.Fatal("a document with a dangling $ref loaded and validated")
	}
}

// consoleEvents go to the OpenCode TUI's streams only. OpenCode's document
// has each of them under the same component name; their objects (a session,
// a message, a part) are questiond's console projections, documented by the
// Console* schemas, so only the envelope is compared, not the objects.
var consoleEvents = map[string]bool{
	"#/components/schemas/EventSessionUpdated":     true,
	"#/components/schemas/EventSessionStatus":      true,
	"#/components/schemas/EventSessionIdle":        true,
	"#/components/schemas/EventMessageUpdated":     true,
	"#/components/schemas/EventMessagePartUpdated": true,
	"#/components/schemas/EventTuiToastShow":       true,
	"#/components/schemas/EventTuiSessionSelect":   true,
}

// TestConsoleEventsAreOpenCodes: every console event has OpenCode's name,
// type and property names; the TUI's own events (toast, session select) are
// OpenCode's exactly.
func TestConsoleEventsAreOpenCodes(t *testing.T) {
	ours, theirs := rawDoc(t), goldenDoc(t)
	for ref := range consoleEvents {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		our := at(t, ours, "components", "schemas", name)
		their := at(t, theirs, "components", "schemas", name)
		sameJSON(t, name+".type", at(t, our, "properties", "type"), at(t, their, "properties", "type"))
		ourProps := at(t, our, "properties", "properties").(map[string]any)
		theirProps := at(t, their, "properties", "properties").(map[string]any)
		sameJSON(t, name+".properties.required", ourProps["required"], theirProps["required"])
		if !slices.Equal(sortedKeys(at(t, ourProps, "properties").(map[string]any)), sortedKeys(at(t, theirProps, "properties").(map[string]any))) {
			t.Errorf("%s: property names %v, OpenCode's %v", name,
				sortedKeys(at(t, ourProps, "properties").(map[string]any)), sortedKeys(at(t, theirProps, "properties").(map[string]any)))
		}
		if strings.HasPrefix(name, "EventTui") {
			// OpenCode documents the TUI's events twice; the bus variant,
			// "Event.<type>", has an id like every event questiond sends.
			typ := at(t, our, "properties", "type", "enum").([]any)[0].(string)
			bare := maps.Clone(our.(map[string]any))
			delete(bare, "description")
			sameJSON(t, name, bare, at(t, theirs, "components", "schemas", "Event."+typ))
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
