package elicit_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/questiond/questiond/internal/elicit"
)

// validateLikeSDK runs the check the MCP Go SDK applies to accepted
// elicitation content: the requested schema decoded into jsonschema-go,
// resolved, and used to validate the content as plain JSON values. Titled
// multi-selects written with items.oneOf are checked as items.anyOf, the
// spelling the SDK insists on.
func validateLikeSDK(rawSchema []byte, content elicit.Content) error {
	schema, err := sdkSchema(rawSchema)
	if err != nil {
		return err
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return fmt.Errorf("resolve: %w", err)
	}
	encoded, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("marshal content: %w", err)
	}
	var plain map[string]any
	if err := json.Unmarshal(encoded, &plain); err != nil {
		return fmt.Errorf("unmarshal content: %w", err)
	}
	if err := resolved.Validate(plain); err != nil {
		return fmt.Errorf("validate %s: %w", encoded, err)
	}
	return nil
}

func sdkSchema(rawSchema []byte) (*jsonschema.Schema, error) {
	var generic map[string]any
	if err := json.Unmarshal(rawSchema, &generic); err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	props, _ := generic["properties"].(map[string]any)
	for _, p := range props {
		items, _ := p.(map[string]any)["items"].(map[string]any)
		if oneOf, ok := items["oneOf"]; ok {
			delete(items, "oneOf")
			items["anyOf"] = oneOf
		}
	}
	rewritten, err := json.Marshal(generic)
	if err != nil {
		return nil, err
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(rewritten, &schema); err != nil {
		return nil, fmt.Errorf("decode schema into jsonschema.Schema: %w", err)
	}
	return &schema, nil
}

// checkContent fails the test unless content passes the SDK's validation and
// holds only keys the schema declares.
func checkContent(t testing.TB, form *elicit.Form, rawSchema string, content elicit.Content) {
	t.Helper()
	if err := validateLikeSDK([]byte(rawSchema), content); err != nil {
		t.Fatalf("content fails the SDK's validation: %v", err)
	}
	if key, ok := undeclaredKey(form, content); ok {
		t.Fatalf("content has undeclared key %q", key)
	}
}

func undeclaredKey(form *elicit.Form, content elicit.Content) (string, bool) {
	declared := map[string]bool{}
	for _, p := range form.Schema.Properties {
		declared[p.Key] = true
	}
	for k := range content {
		if !declared[k] {
			return k, true
		}
	}
	return "", false
}

// The validator itself must be able to fail, or every test leaning on it
// proves nothing.
func TestValidateLikeSDKRejectsBadContent(t *testing.T) {
	raw := `{"type":"object","properties":{
		"n":{"type":"integer","maximum":3},
		"m":{"type":"array","items":{"oneOf":[{"const":"a","title":"A"}]}}},
		"required":["n"]}`
	for name, content := range map[string]elicit.Content{
		"missing required": {},
		"above maximum":    {"n": int64(4)},
		"not an integer":   {"n": 2.5},
		"oneOf as anyOf":   {"n": int64(1), "m": []string{"b"}},
	} {
		if err := validateLikeSDK([]byte(raw), content); err == nil {
			t.Errorf("%s: %v passed the SDK validation", name, content)
		}
	}
	if err := validateLikeSDK([]byte(raw), elicit.Content{"n": int64(3), "m": []string{"a"}}); err != nil {
		t.Errorf("valid content rejected: %v", err)
	}
}
