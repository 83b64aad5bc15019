package elicit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/elicit"
)

// exported keeps the fields a caller can see, so tests compare only those.
func exported(p elicit.Property) elicit.Property {
	return elicit.Property{
		Key: p.Key, Kind: p.Kind, Title: p.Title, Description: p.Description, Required: p.Required,
		Format: p.Format, Pattern: p.Pattern, MinLength: p.MinLength, MaxLength: p.MaxLength,
		Minimum: p.Minimum, Maximum: p.Maximum, MinItems: p.MinItems, MaxItems: p.MaxItems,
		Choices: p.Choices, Default: p.Default,
	}
}

func parseOne(t *testing.T, property string, required bool) elicit.Property {
	t.Helper()
	req := ""
	if required {
		req = `,"required":["p"]`
	}
	schema, err := elicit.ParseSchema(json.RawMessage(`{"type":"object","properties":{"p":`+property+`}`+req+`}`), elicit.Options{})
	if err != nil {
		t.Fatalf("ParseSchema: %v", err)
	}
	if len(schema.Properties) != 1 {
		t.Fatalf("got %d properties", len(schema.Properties))
	}
	return exported(schema.Properties[0])
}

func ip(n int) *int         { return &n }
func fp(f float64) *float64 { return &f }
func ch(pairs ...string) []elicit.Choice {
	out := make([]elicit.Choice, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, elicit.Choice{Value: pairs[i], Label: pairs[i+1]})
	}
	return out
}

func TestParseSchemaShapes(t *testing.T) {
	tests := []struct {
		name, property string
		want           elicit.Property
	}{
		{"plain string", `{"type":"string"}`, elicit.Property{Kind: elicit.KindString}},
		{"string with everything",
			`{"type":"string","title":"T","description":"D","minLength":1,"maxLength":40,"format":"email","default":"a@b.c","$comment":"c","examples":["x@y.z"],"deprecated":false,"x-ui":{"w":1}}`,
			elicit.Property{Kind: elicit.KindString, Title: "T", Description: "D", MinLength: ip(1), MaxLength: ip(40), Format: "email", Default: "a@b.c"}},
		{"string pattern", `{"type":"string","pattern":"^[a-z]+$","default":"abc"}`,
			elicit.Property{Kind: elicit.KindString, Pattern: "^[a-z]+$", Default: "abc"}},
		{"count with zero fraction", `{"type":"string","maxLength":4.0}`, elicit.Property{Kind: elicit.KindString, MaxLength: ip(4)}},
		{"number", `{"type":"number","minimum":-0.5,"maximum":1e3,"default":95.5}`,
			elicit.Property{Kind: elicit.KindNumber, Minimum: fp(-0.5), Maximum: fp(1000), Default: 95.5}},
		{"number default minus zero", `{"type":"number","default":-0}`, elicit.Property{Kind: elicit.KindNumber, Default: 0.0}},
		{"integer", `{"type":"integer","minimum":0,"maximum":150,"default":30}`,
			elicit.Property{Kind: elicit.KindInteger, Minimum: fp(0), Maximum: fp(150), Default: int64(30)}},
		{"integer default written as float", `{"type":"integer","default":30.0}`, elicit.Property{Kind: elicit.KindInteger, Default: int64(30)}},
		{"integer fractional bounds", `{"type":"integer","minimum":0.5,"maximum":1.5}`, elicit.Property{Kind: elicit.KindInteger, Minimum: fp(0.5), Maximum: fp(1.5)}},
		{"boolean", `{"type":"boolean","default":false}`, elicit.Property{Kind: elicit.KindBoolean, Default: false}},
		{"untitled enum", `{"type":"string","enum":["a","b"],"default":"b"}`,
			elicit.Property{Kind: elicit.KindSingleEnum, Choices: ch("a", "a", "b", "b"), Default: "b"}},
		{"legacy enumNames", `{"type":"string","enum":["a","b"],"enumNames":["Alpha","Beta"]}`,
			elicit.Property{Kind: elicit.KindSingleEnum, Choices: ch("a", "Alpha", "b", "Beta")}},
		{"titled oneOf", `{"type":"string","oneOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Beta","$comment":"x"}]}`,
			elicit.Property{Kind: elicit.KindSingleEnum, Choices: ch("a", "Alpha", "b", "Beta")}},
		{"labels differing in case", `{"type":"string","enum":["Red","red"]}`,
			elicit.Property{Kind: elicit.KindSingleEnum, Choices: ch("Red", "Red", "red", "red")}},
		{"untitled multi", `{"type":"array","minItems":1,"maxItems":2,"uniqueItems":true,"items":{"type":"string","enum":["a","b","c"]},"default":["c","a"]}`,
			elicit.Property{Kind: elicit.KindMultiSelect, MinItems: ip(1), MaxItems: ip(2), Choices: ch("a", "a", "b", "b", "c", "c"), Default: []string{"a", "c"}}},
		{"titled multi anyOf", `{"type":"array","items":{"anyOf":[{"const":"u1","title":"Ada"}]}}`,
			elicit.Property{Kind: elicit.KindMultiSelect, Choices: ch("u1", "Ada")}},
		{"titled multi oneOf", `{"type":"array","items":{"oneOf":[{"const":"u1","title":"Ada"}]}}`,
			elicit.Property{Kind: elicit.KindMultiSelect, Choices: ch("u1", "Ada")}},
		{"multi empty default", `{"type":"array","items":{"type":"string","enum":["a"]},"default":[]}`,
			elicit.Property{Kind: elicit.KindMultiSelect, Choices: ch("a", "a"), Default: []string{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Key = "p"
			got := parseOne(t, tc.property, false)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseSchemaRequired(t *testing.T) {
	if !parseOne(t, `{"type":"string"}`, true).Required {
		t.Fatal("required property not marked")
	}
	if parseOne(t, `{"type":"string"}`, false).Required {
		t.Fatal("optional property marked required")
	}
}

func TestParseSchemaRootExtras(t *testing.T) {
	raw := `{"$schema":"http://json-schema.org/draft-07/schema#","title":"T","description":"D","$comment":"c",
		"x-vendor":[1,{"a":null}],"additionalProperties":false,"type":"object","properties":{"a":{"type":"boolean"}},"required":[]}`
	if _, err := elicit.ParseSchema(json.RawMessage(raw), elicit.Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestParseSchemaKeepsDocumentOrder(t *testing.T) {
	keys := []string{"zeta", "alpha", "Mid", "q10", "q2", "ünï", "a.b", ""}
	keys = keys[:len(keys)-1] // empty names are rejected, see the reject table
	var props []string
	for _, k := range keys {
		props = append(props, fmt.Sprintf("%q:{\"type\":\"string\"}", k))
	}
	schema, err := elicit.ParseSchema(json.RawMessage(`{"type":"object","properties":{`+strings.Join(props, ",")+`}}`), elicit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range schema.Properties {
		got = append(got, p.Key)
	}
	if !reflect.DeepEqual(got, keys) {
		t.Fatalf("order %q, want %q", got, keys)
	}
}

// manyProperties builds a schema with n string properties p0…p(n-1).
func manyProperties(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

func TestParseSchemaPropertyLimit(t *testing.T) {
	schema, err := elicit.ParseSchema(json.RawMessage(manyProperties(50)), elicit.Options{})
	if err != nil || len(schema.Properties) != 50 {
		t.Fatalf("50 properties: %v", err)
	}
	for i, p := range schema.Properties {
		if p.Key != fmt.Sprintf("p%d", i) {
			t.Fatalf("property %d is %q", i, p.Key)
		}
	}
	_, err = elicit.ParseSchema(json.RawMessage(manyProperties(51)), elicit.Options{})
	wantSchemaError(t, err, "requestedSchema.properties", "declares 51 properties; the limit is 50")
	_, err = elicit.ParseSchema(json.RawMessage(manyProperties(4)), elicit.Options{MaxProperties: 3})
	wantSchemaError(t, err, "requestedSchema.properties", "declares 4 properties; the limit is 3")
	if _, err = elicit.ParseSchema(json.RawMessage(manyProperties(80)), elicit.Options{MaxProperties: 100}); err != nil {
		t.Fatal(err)
	}
}

func wantSchemaError(t *testing.T, err error, path, rule string) {
	t.Helper()
	var se *elicit.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want *SchemaError %s: %s", err, path, rule)
	}
	if se.Path != path || se.Rule != rule {
		t.Fatalf("got  %s: %s\nwant %s: %s", se.Path, se.Rule, path, rule)
	}
	if se.Error() != path+": "+rule {
		t.Fatalf("Error() = %q", se.Error())
	}
}

// prop wraps one property schema "p" into a requestedSchema.
func prop(p string) string { return `{"type":"object","properties":{"p":` + p + `}}` }

func TestParseSchemaRejects(t *testing.T) {
	const pp = "requestedSchema.properties.p"
	tests := []struct{ name, raw, path, rule string }{
		// The document.
		{"empty", ``, "requestedSchema", "is missing"},
		{"whitespace", " \n", "requestedSchema", "is missing"},
		{"null", `null`, "requestedSchema", "must be a JSON object, got null"},
		{"array root", `[]`, "requestedSchema", "must be a JSON object, got an array"},
		{"string root", `"object"`, "requestedSchema", "must be a JSON object, got a string"},
		{"byte order mark", "\xef\xbb\xbf" + prop(`{"type":"string"}`), "requestedSchema", "starts with a byte order mark; send plain UTF-8 JSON"},
		{"invalid utf-8", `{"type":"object","properties":{"p":{"type":"string","title":"` + "\xff" + `"}}}`, "requestedSchema", "is not valid UTF-8"},
		{"trailing garbage", prop(`{"type":"string"}`) + ` x`, "requestedSchema", "unexpected data after the JSON value"},
		{"second value", prop(`{"type":"string"}`) + ` {}`, "requestedSchema", "unexpected data after the JSON value"},
		{"truncated", `{"type":"object","properties":{`, "requestedSchema.properties", "invalid JSON: unexpected end of input"},
		{"syntax error", `{"type":"object",}`, "requestedSchema", "invalid JSON at byte 17: invalid character '}' looking for beginning of object key string"},
		{"duplicate root key", `{"type":"object","type":"object","properties":{}}`, "requestedSchema", `duplicate key "type"`},
		{"duplicate property", `{"type":"object","properties":{"p":{"type":"string"},"p":{"type":"number"}}}`, "requestedSchema.properties", `duplicate key "p"`},
		{"duplicate keyword", prop(`{"type":"string","title":"a","title":"b"}`), pp, `duplicate key "title"`},
		// The root.
		{"root type missing", `{"properties":{"p":{"type":"string"}}}`, "requestedSchema", `missing "type": "object"`},
		{"root type string", `{"type":"string","properties":{"p":{"type":"string"}}}`, "requestedSchema.type", `must be "object", got "string"`},
		{"root type array", `{"type":["object"],"properties":{"p":{"type":"string"}}}`, "requestedSchema.type", `must be "object", got an array`},
		{"no properties", `{"type":"object"}`, "requestedSchema", `missing "properties"`},
		{"zero properties", `{"type":"object","properties":{}}`, "requestedSchema.properties", "must declare at least one property"},
		{"properties array", `{"type":"object","properties":[]}`, "requestedSchema.properties", "must be an object, got an array"},
		{"empty property name", `{"type":"object","properties":{"":{"type":"string"}}}`, "requestedSchema.properties", "property names must not be empty"},
		{"root $ref", `{"type":"object","$ref":"#/x","properties":{"p":{"type":"string"}}}`, "requestedSchema", `keyword "$ref" is not allowed in elicitation schemas`},
		{"root $defs", `{"type":"object","$defs":{},"properties":{"p":{"type":"string"}}}`, "requestedSchema", `keyword "$defs" is not allowed in elicitation schemas`},
		{"additionalProperties true", `{"type":"object","additionalProperties":true,"properties":{"p":{"type":"string"}}}`, "requestedSchema.additionalProperties", "only false is allowed (content never carries undeclared keys)"},
		{"unknown dialect", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"p":{"type":"string"}}}`, "requestedSchema.$schema", `unsupported dialect "http://json-schema.org/draft-04/schema#" (use https://json-schema.org/draft/2020-12/schema or http://json-schema.org/draft-07/schema#)`},
		{"$schema not a string", `{"$schema":1,"type":"object","properties":{"p":{"type":"string"}}}`, "requestedSchema.$schema", "must be a string, got a number"},
		{"required not array", `{"type":"object","properties":{"p":{"type":"string"}},"required":"p"}`, "requestedSchema.required", "must be an array of property names, got a string"},
		{"required unknown", `{"type":"object","properties":{"p":{"type":"string"}},"required":["q"]}`, "requestedSchema.required[0]", `"q" is not a declared property`},
		{"required twice", `{"type":"object","properties":{"p":{"type":"string"}},"required":["p","p"]}`, "requestedSchema.required[1]", `"p" is listed twice`},
		{"required number", `{"type":"object","properties":{"p":{"type":"string"}},"required":[1]}`, "requestedSchema.required[0]", "must be a property name (a string), got a number"},
		// Property shapes outside the subset.
		{"nested object", `{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}}}`, "requestedSchema.properties.address", "nested objects are not allowed in elicitation schemas"},
		{"nested properties without type", prop(`{"properties":{}}`), pp, "nested objects are not allowed in elicitation schemas"},
		{"array of objects", prop(`{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}}`), pp + ".items", "arrays of objects are not allowed in elicitation schemas"},
		{"array of strings", prop(`{"type":"array","items":{"type":"string"}}`), pp + ".items", `needs "enum" or "anyOf" listing the choices`},
		{"array of numbers", prop(`{"type":"array","items":{"type":"number","enum":[1]}}`), pp + ".items.type", `multi-select items must be "string", got "number"`},
		{"tuple items", prop(`{"type":"array","items":[{"type":"string"}]}`), pp + ".items", "must be an object, got an array"},
		{"missing items", prop(`{"type":"array"}`), pp, `missing "items" (a multi-select needs items.enum or items.anyOf)`},
		{"items enum without type", prop(`{"type":"array","items":{"enum":["a"]}}`), pp + ".items", `missing "type": "string" (required next to items.enum)`},
		{"items enum and anyOf", prop(`{"type":"array","items":{"type":"string","enum":["a"],"anyOf":[{"const":"a","title":"A"}]}}`), pp + ".items", "use only one of enum, anyOf or oneOf"},
		{"items type next to anyOf", prop(`{"type":"array","items":{"type":"string","anyOf":[{"const":"a","title":"A"}]}}`), pp + ".items.type", "not allowed next to items.anyOf (titled multi-select items hold only the options)"},
		{"items extra keyword", prop(`{"type":"array","items":{"type":"string","enum":["a"],"minLength":1}}`), pp + ".items", `keyword "minLength" is not allowed in multi-select items`},
		{"$ref", prop(`{"$ref":"#/$defs/x"}`), pp, `keyword "$ref" is not allowed in elicitation schemas`},
		{"allOf", prop(`{"type":"string","allOf":[]}`), pp, `keyword "allOf" is not allowed in elicitation schemas`},
		{"anyOf on property", prop(`{"anyOf":[{"type":"string"},{"type":"null"}]}`), pp, `keyword "anyOf" is not allowed in elicitation schemas`},
		{"not", prop(`{"type":"string","not":{}}`), pp, `keyword "not" is not allowed in elicitation schemas`},
		{"const", prop(`{"type":"string","const":"a"}`), pp, `keyword "const" is not allowed in elicitation schemas`},
		{"multipleOf", prop(`{"type":"number","multipleOf":2}`), pp, `keyword "multipleOf" is not allowed in elicitation schemas`},
		{"exclusiveMinimum", prop(`{"type":"number","exclusiveMinimum":0}`), pp, `keyword "exclusiveMinimum" is not allowed in elicitation schemas`},
		{"nullable", prop(`{"type":"string","nullable":true}`), pp, `keyword "nullable" is not allowed in elicitation schemas`},
		{"keyword in wrong case", prop(`{"type":"string","MinLength":1}`), pp, `keyword "MinLength" is not allowed in elicitation schemas`},
		{"type array", prop(`{"type":["string","null"]}`), pp + ".type", `type arrays such as ["string","null"] are not allowed; use exactly one type`},
		{"type missing", prop(`{"title":"x"}`), pp, `missing "type" (one of string, number, integer, boolean or array)`},
		{"enum without type", prop(`{"enum":["a"]}`), pp, `missing "type" (one of string, number, integer, boolean or array)`},
		{"type null", prop(`{"type":"null"}`), pp + ".type", `unsupported type "null" (use string, number, integer, boolean or array)`},
		{"type number value", prop(`{"type":1}`), pp + ".type", "must be a string, got a number"},
		{"property not an object", prop(`true`), pp, "must be a schema object, got a boolean"},
		{"keyword of another kind", prop(`{"type":"string","minimum":1}`), pp, `keyword "minimum" is not allowed on string properties`},
		{"format on enum", prop(`{"type":"string","enum":["a"],"format":"email"}`), pp, `keyword "format" is not allowed on single-select enum properties`},
		{"enum on number", prop(`{"type":"number","enum":[1]}`), pp, `keyword "enum" is not allowed on number properties`},
		{"minItems on boolean", prop(`{"type":"boolean","minItems":1}`), pp, `keyword "minItems" is not allowed on boolean properties`},
		{"pattern on multi", prop(`{"type":"array","pattern":"x","items":{"type":"string","enum":["a"]}}`), pp, `keyword "pattern" is not allowed on multi-select properties`},
		// Annotations of the wrong type.
		{"title number", prop(`{"type":"string","title":5}`), pp + ".title", "must be a string, got a number"},
		{"description null", prop(`{"type":"string","description":null}`), pp + ".description", "must be a string, got null"},
		{"examples object", prop(`{"type":"string","examples":{}}`), pp + ".examples", "must be an array, got an object"},
		{"deprecated string", prop(`{"type":"string","deprecated":"yes"}`), pp + ".deprecated", "must be a boolean, got a string"},
		// String rules.
		{"unknown format", prop(`{"type":"string","format":"ipv4"}`), pp + ".format", `format "ipv4" is not allowed (use email, uri, date or date-time)`},
		{"empty format", prop(`{"type":"string","format":""}`), pp + ".format", `format "" is not allowed (use email, uri, date or date-time)`},
		{"negative minLength", prop(`{"type":"string","minLength":-1}`), pp + ".minLength", "must be a non-negative integer up to 2147483647, got -1"},
		{"fractional maxLength", prop(`{"type":"string","maxLength":1.5}`), pp + ".maxLength", "must be a non-negative integer up to 2147483647, got 1.5"},
		{"exponent maxLength", prop(`{"type":"string","maxLength":1e3}`), pp + ".maxLength", "must be a non-negative integer up to 2147483647, got 1e3"},
		{"huge maxLength", prop(`{"type":"string","maxLength":99999999999999999999}`), pp + ".maxLength", "must be a non-negative integer up to 2147483647, got 99999999999999999999"},
		{"string maxLength", prop(`{"type":"string","maxLength":"3"}`), pp + ".maxLength", "must be a non-negative integer, got a string"},
		{"minLength above maxLength", prop(`{"type":"string","minLength":5,"maxLength":3}`), pp + ".minLength", "minLength 5 is greater than maxLength 3"},
		{"invalid pattern", prop(`{"type":"string","pattern":"(?<=a)b"}`), pp + ".pattern", `the pattern is not a regular expression questiond can use: invalid named capture at "(?<=a)b" (patterns are RE2: no lookahead or lookbehind, no backreferences)`},
		{"backreference pattern", prop(`{"type":"string","pattern":"(a)\\1"}`), pp + ".pattern", `the pattern is not a regular expression questiond can use: invalid escape sequence at "\\1" (patterns are RE2: no lookahead or lookbehind, no backreferences)`},
		{"default wrong type", prop(`{"type":"string","default":5}`), pp + ".default", "must be a string, got a number"},
		{"default too long", prop(`{"type":"string","maxLength":2,"default":"abc"}`), pp + ".default", `"abc" is longer than 2 characters`},
		{"default bad email", prop(`{"type":"string","format":"email","default":"nope"}`), pp + ".default", `"nope" is not an email address (name@example.com)`},
		{"default bad date", prop(`{"type":"string","format":"date","default":"2024-02-30"}`), pp + ".default", `"2024-02-30" is not a date (YYYY-MM-DD)`},
		{"default breaks pattern", prop(`{"type":"string","pattern":"^a","default":"b"}`), pp + ".default", `"b" does not match the pattern ^a`},
		// Number rules.
		{"minimum above maximum", prop(`{"type":"number","minimum":5,"maximum":1}`), pp + ".minimum", "minimum 5 is greater than maximum 1"},
		{"no integer in range", prop(`{"type":"integer","minimum":0.2,"maximum":0.8}`), pp + ".minimum", "no integer lies between minimum 0.2 and maximum 0.8"},
		{"minimum out of range", prop(`{"type":"number","minimum":1e400}`), pp + ".minimum", `"1e400" is out of range`},
		{"maximum string", prop(`{"type":"number","maximum":"5"}`), pp + ".maximum", "must be a number, got a string"},
		{"number default string", prop(`{"type":"number","default":"5"}`), pp + ".default", "must be a number, got a string"},
		{"integer default fractional", prop(`{"type":"integer","default":2.5}`), pp + ".default", `"2.5" is not an integer`},
		{"integer default huge", prop(`{"type":"integer","default":1e20}`), pp + ".default", `"1e20" is outside the safe integer range ±2^53`},
		{"default below minimum", prop(`{"type":"integer","minimum":1,"default":0}`), pp + ".default", "0 is less than the minimum 1"},
		{"boolean default string", prop(`{"type":"boolean","default":"true"}`), pp + ".default", "must be true or false, got a string"},
		// Enum rules.
		{"empty enum", prop(`{"type":"string","enum":[]}`), pp + ".enum", "must list at least one value"},
		{"enum not array", prop(`{"type":"string","enum":"a"}`), pp + ".enum", "must be an array of strings, got a string"},
		{"enum number value", prop(`{"type":"string","enum":["a",1]}`), pp + ".enum[1]", "must be a string, got a number"},
		{"enum blank value", prop(`{"type":"string","enum":["a"," "]}`), pp + ".enum[1]", "must not be blank"},
		{"enum duplicate value", prop(`{"type":"string","enum":["a","b","a"]}`), pp + ".enum[2]", `duplicate value "a"`},
		{"enumNames shorter", prop(`{"type":"string","enum":["a","b","c"],"enumNames":["A","B"]}`), pp + ".enumNames", "has 2 names for 3 enum values; they must pair up one to one"},
		{"enumNames duplicate label", prop(`{"type":"string","enum":["a","b"],"enumNames":["Same","Same"]}`), pp + ".enumNames[1]", `duplicate option label "Same"`},
		{"enumNames without enum", prop(`{"type":"string","oneOf":[{"const":"a","title":"A"}],"enumNames":["A"]}`), pp + ".enumNames", "enumNames is only allowed next to enum"},
		{"enum and oneOf", prop(`{"type":"string","enum":["a"],"oneOf":[{"const":"a","title":"A"}]}`), pp + ".oneOf", "use either enum or oneOf, not both"},
		{"empty oneOf", prop(`{"type":"string","oneOf":[]}`), pp + ".oneOf", "must list at least one option"},
		{"oneOf without title", prop(`{"type":"string","oneOf":[{"const":"a"}]}`), pp + ".oneOf[0]", `missing "title"`},
		{"oneOf without const", prop(`{"type":"string","oneOf":[{"title":"A"}]}`), pp + ".oneOf[0]", `missing "const"`},
		{"oneOf empty const", prop(`{"type":"string","oneOf":[{"const":"","title":"A"}]}`), pp + ".oneOf[0].const", "must not be empty"},
		{"oneOf number const", prop(`{"type":"string","oneOf":[{"const":1,"title":"A"}]}`), pp + ".oneOf[0].const", "must be a string, got a number"},
		{"oneOf blank title", prop(`{"type":"string","oneOf":[{"const":"a","title":"  "}]}`), pp + ".oneOf[0].title", "must not be blank"},
		{"oneOf extra keyword", prop(`{"type":"string","oneOf":[{"const":"a","title":"A","type":"string"}]}`), pp + ".oneOf[0]", `keyword "type" is not allowed in a titled option (only "const" and "title")`},
		{"oneOf duplicate label", prop(`{"type":"string","oneOf":[{"const":"a","title":"Red"},{"const":"b","title":"Red"}]}`), pp + ".oneOf[1].title", `duplicate option label "Red"`},
		{"oneOf duplicate const", prop(`{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"a","title":"B"}]}`), pp + ".oneOf[1].const", `duplicate value "a"`},
		{"label with escape", prop(`{"type":"string","oneOf":[{"const":"a","title":"\u001b[31mRed"}]}`), pp + ".oneOf[0].title", "option labels must not contain control characters"},
		{"untitled value with newline", prop(`{"type":"string","enum":["a\nb"]}`), pp + ".enum[0]", "option labels must not contain control characters"},
		{"enumName with tab", prop(`{"type":"string","enum":["a"],"enumNames":["A\tB"]}`), pp + ".enumNames[0]", "option labels must not contain control characters"},
		{"enum default unknown", prop(`{"type":"string","enum":["a"],"default":"b"}`), pp + ".default", `"b" is not one of the allowed values`},
		{"enum default null", prop(`{"type":"string","enum":["a"],"default":null}`), pp + ".default", "must be a string, got null"},
		// Multi-select rules.
		{"anyOf duplicate label", prop(`{"type":"array","items":{"anyOf":[{"const":"a","title":"X"},{"const":"b","title":"X"}]}}`), pp + ".items.anyOf[1].title", `duplicate option label "X"`},
		{"minItems above maxItems", prop(`{"type":"array","minItems":2,"maxItems":1,"items":{"type":"string","enum":["a","b"]}}`), pp + ".minItems", "minItems 2 is greater than maxItems 1"},
		{"minItems above choices", prop(`{"type":"array","minItems":3,"items":{"type":"string","enum":["a","b"]}}`), pp + ".minItems", "minItems 3 exceeds the 2 choices"},
		{"uniqueItems false", prop(`{"type":"array","uniqueItems":false,"items":{"type":"string","enum":["a"]}}`), pp + ".uniqueItems", "only true is allowed (multi-select answers are always unique)"},
		{"multi default string", prop(`{"type":"array","items":{"type":"string","enum":["a"]},"default":"a"}`), pp + ".default", "must be an array of values, got a string"},
		{"multi default unknown", prop(`{"type":"array","items":{"type":"string","enum":["a"]},"default":["b"]}`), pp + ".default[0]", `"b" is not one of the allowed values`},
		{"multi default repeated", prop(`{"type":"array","items":{"type":"string","enum":["a"]},"default":["a","a"]}`), pp + ".default[1]", `"a" is listed twice`},
		{"multi default too many", prop(`{"type":"array","maxItems":1,"items":{"type":"string","enum":["a","b"]},"default":["a","b"]}`), pp + ".default", "pick at most 1 choice, got 2"},
		// Paths quote keys that are not plain words.
		{"long key in path", `{"type":"object","properties":{"` + strings.Repeat("a", 100) + `":{"type":"object"}}}`, `requestedSchema.properties["` + strings.Repeat("a", 59) + `…"]`, "nested objects are not allowed in elicitation schemas"},
		{"odd key in path", `{"type":"object","properties":{"a b.c":{"type":"object"}}}`, `requestedSchema.properties["a b.c"]`, "nested objects are not allowed in elicitation schemas"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := elicit.ParseSchema(json.RawMessage(tc.raw), elicit.Options{})
			wantSchemaError(t, err, tc.path, tc.rule)
			_, err = elicit.NewForm("m", json.RawMessage(tc.raw), elicit.Options{})
			wantSchemaError(t, err, tc.path, tc.rule)
		})
	}
}

func TestParseSchemaDeepNesting(t *testing.T) {
	// Far deeper than any real schema: must fail cleanly, not exhaust the
	// stack or the CPU.
	const depth = 1_000_000
	deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	raw := `{"type":"object","properties":{"p":{"type":"string","x-deep":` + deep + `}}}`
	_, err := elicit.ParseSchema(json.RawMessage(raw), elicit.Options{})
	var se *elicit.SchemaError
	if !errors.As(err, &se) || !strings.HasSuffix(se.Rule, "nested more than 32 levels deep") {
		t.Fatalf("got %v", err)
	}
}

func TestParseSchemaManyKeysIsLinear(t *testing.T) {
	// 200k distinct extension keys: the duplicate check must not be
	// quadratic (this would take minutes if it were).
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"p":{"type":"string"}}`)
	for i := range 200_000 {
		fmt.Fprintf(&b, `,"x-%d":0`, i)
	}
	b.WriteString(`,"x-7":1}`)
	_, err := elicit.ParseSchema(json.RawMessage(b.String()), elicit.Options{})
	wantSchemaError(t, err, "requestedSchema", `duplicate key "x-7"`)
}
