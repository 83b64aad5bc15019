package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/questiond/questiond/api"
)

// Event frames are checked against their stream's schema compiled once.
// kin-openapi compiles a schema on every validation, and the event unions
// are large: under -race that costs about a second per frame, which made
// the stream tests slower than their own patience. A stream's first frame
// still goes through openapi3filter.ValidateResponse (status, headers,
// content type); every frame, the first too, goes through the compiled
// schema of the response the route documents.

const docURL = "file:///questiond/openapi.json"

var frameCompiler = sync.OnceValues(func() (*jsonschema.Compiler, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(api.JSON()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, err
	}
	return c, nil
})

var (
	frameSchemasMu sync.Mutex
	frameSchemas   = map[string]*jsonschema.Schema{}
)

// frameSchema is the compiled schema of the event frames input's route
// answers with: its 200 response's text/event-stream schema.
func frameSchema(t *testing.T, input *openapi3filter.RequestValidationInput) *jsonschema.Schema {
	t.Helper()
	res := input.Route.Operation.Responses.Status(http.StatusOK)
	if res == nil || res.Value == nil || res.Value.Content["text/event-stream"] == nil {
		t.Fatalf("%s %s documents no event stream", input.Request.Method, input.Route.Path)
	}
	ref := res.Value.Content["text/event-stream"].Schema.Ref
	if ref == "" {
		t.Fatalf("%s %s: the event stream's schema is not a component", input.Request.Method, input.Route.Path)
	}
	frameSchemasMu.Lock()
	defer frameSchemasMu.Unlock()
	if s := frameSchemas[ref]; s != nil {
		return s
	}
	c, err := frameCompiler()
	if err != nil {
		t.Fatalf("loading the document for frames: %v", err)
	}
	s, err := c.Compile(docURL + ref)
	if err != nil {
		t.Fatalf("compiling %s: %v", ref, err)
	}
	frameSchemas[ref] = s
	return s
}

// checkFrame validates one raw frame ("data: …\n\n") against schema.
func checkFrame(schema *jsonschema.Schema, raw []byte) error {
	if _, err := decodeFrame(bytes.NewReader(raw), nil, nil, nil); err != nil {
		return err
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(bytes.TrimPrefix(raw, []byte("data: "))))
	if err != nil {
		return fmt.Errorf("frame data: %w", err)
	}
	return schema.Validate(value)
}

// The compiled frame schemas refuse what the document does not allow.
func TestLiveFrameSchemaIsStrict(t *testing.T) {
	c, err := frameCompiler()
	if err != nil {
		t.Fatal(err)
	}
	global, err := c.Compile(docURL + "#/components/schemas/GlobalEvent")
	if err != nil {
		t.Fatal(err)
	}
	good := `data: {"directory":"/d","project":"global","payload":{"id":"evt_1","type":"tui.toast.show","properties":{"message":"m","variant":"info"}}}` + "\n\n"
	if err := checkFrame(global, []byte(good)); err != nil {
		t.Fatalf("a documented frame refused: %v", err)
	}
	for name, raw := range map[string]string{
		"unknown event type":       `{"payload":{"id":"evt_1","type":"session.deleted","properties":{"sessionID":"ses_1"}}}`,
		"toast variant":            `{"payload":{"id":"evt_1","type":"tui.toast.show","properties":{"message":"m","variant":"loud"}}}`,
		"asked without id":         `{"payload":{"id":"evt_1","type":"question.asked","properties":{"sessionID":"ses_1","questions":[]}}}`,
		"status of a kind":         `{"payload":{"id":"evt_1","type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"retry"}}}}`,
		"extra envelope key":       `{"payload":{"id":"evt_1","type":"server.connected","properties":{}},"extra":1}`,
		"event id not evt_":        `{"payload":{"id":"1","type":"server.connected","properties":{}}}`,
		"select without a session": `{"payload":{"id":"evt_1","type":"tui.session.select","properties":{}}}`,
	} {
		if err := checkFrame(global, []byte("data: "+raw+"\n\n")); err == nil {
			t.Errorf("%s: frame accepted: %s", name, raw)
		}
	}
}
