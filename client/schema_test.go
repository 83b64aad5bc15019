package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

func TestBuildRendersTheMCPSubsetInCallOrder(t *testing.T) {
	schema, err := client.NewSchema().
		String("name", client.Title("Name"), client.Description("Who?"), client.MinLength(1), client.MaxLength(40)).
		Integer("replicas", client.Min(1), client.Max(10), client.DefaultNumber(2)).
		Bool("dryRun", client.DefaultBool(true), client.Optional()).
		ChooseTitled("region", []client.Choice{{Value: "eu-west-1", Title: "Ireland"}}, client.DefaultChoice("eu-west-1")).
		ChooseManyTitled("owners", []client.Choice{{Value: "u1", Title: "Ada"}, {Value: "u2", Title: "Linus"}}, client.MinItems(1)).
		Choose("env", []string{"dev", "prod"}).
		ChooseMany("tags", []string{"web", "db"}, client.DefaultChoices(), client.Optional()).
		Build()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"name":{"type":"string","title":"Name","description":"Who?","minLength":1,"maxLength":40},` +
		`"replicas":{"type":"integer","minimum":1,"maximum":10,"default":2},` +
		`"dryRun":{"type":"boolean","default":true},` +
		`"region":{"type":"string","oneOf":[{"const":"eu-west-1","title":"Ireland"}],"default":"eu-west-1"},` +
		`"owners":{"type":"array","items":{"anyOf":[{"const":"u1","title":"Ada"},{"const":"u2","title":"Linus"}]},"minItems":1},` +
		`"env":{"type":"string","enum":["dev","prod"]},` +
		`"tags":{"type":"array","items":{"type":"string","enum":["web","db"]},"default":[]}},` +
		`"required":["name","replicas","region","owners","env"]}`
	if string(schema) != want {
		t.Fatalf("built\n%s\nwant\n%s", schema, want)
	}
}

// environment is a Go string enum with display names.
type environment string

const (
	envDev  environment = "dev"
	envProd environment = "prod"
)

func (e environment) String() string {
	return map[environment]string{envDev: "Development", envProd: "Production"}[e]
}

func TestChoicesOfUsesDisplayNames(t *testing.T) {
	got := client.ChoicesOf(envDev, envProd)
	if len(got) != 2 || got[0] != (client.Choice{Value: "dev", Title: "Development"}) || got[1] != (client.Choice{Value: "prod", Title: "Production"}) {
		t.Fatalf("ChoicesOf = %+v", got)
	}
	type plain string
	if got := client.ChoicesOf(plain("a")); got[0] != (client.Choice{Value: "a", Title: "a"}) {
		t.Fatalf("ChoicesOf without String() = %+v", got)
	}
}

// Every builder method, with every option it takes, makes a schema that
// questiond accepts (201) and answers with content that the MCP Go SDK
// accepts as valid for that very schema.
func TestBuiltSchemasPassQuestiondAndTheGoSDK(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	c := newClient(t, d.URL, client.Options{})
	for _, tc := range []struct {
		name    string
		build   *client.SchemaBuilder
		answers [][]string
		want    string // the content the SDK hands the tool (defaults applied)
	}{
		{"string", client.NewSchema().String("s"), [][]string{{"hello"}}, `{"s":"hello"}`},
		{"string options", client.NewSchema().String("s", client.Title("S"), client.Description("Say it"), client.MinLength(2), client.MaxLength(5), client.DefaultString("hey")),
			[][]string{{"hi"}}, `{"s":"hi"}`},
		{"email", client.NewSchema().String("e", client.Email(), client.DefaultString("ada@example.com")), [][]string{{"bob@example.org"}}, `{"e":"bob@example.org"}`},
		{"uri", client.NewSchema().String("u", client.URI()), [][]string{{"https://example.com/x"}}, `{"u":"https://example.com/x"}`},
		{"date", client.NewSchema().String("d", client.Date(), client.DefaultString("2026-01-31")), [][]string{{""}}, `{"d":"2026-01-31"}`},
		{"date-time", client.NewSchema().String("t", client.DateTime()), [][]string{{"2026-02-03T04:05:06Z"}}, `{"t":"2026-02-03T04:05:06Z"}`},
		{"optional string", client.NewSchema().String("s", client.Optional()).Bool("b"), [][]string{{}, {"yes"}}, `{"b":true}`},
		{"integer", client.NewSchema().Integer("i", client.Title("I"), client.Min(-3), client.Max(3), client.DefaultNumber(0)), [][]string{{"-2"}}, `{"i":-2}`},
		{"integer default", client.NewSchema().Integer("i", client.DefaultNumber(7), client.Optional()), [][]string{{}}, `{"i":7}`},
		{"number", client.NewSchema().Number("n", client.Min(0), client.Max(1), client.DefaultNumber(0.5), client.Description("A ratio")), [][]string{{"0.125"}}, `{"n":0.125}`},
		{"bool", client.NewSchema().Bool("b", client.Title("B"), client.DefaultBool(false)), [][]string{{"Yes"}}, `{"b":true}`},
		{"optional bool default", client.NewSchema().Bool("b", client.DefaultBool(true), client.Optional()), [][]string{{}}, `{"b":true}`},
		{"choose", client.NewSchema().Choose("c", []string{"red", "green"}, client.Title("Colour"), client.DefaultChoice("green")), [][]string{{"red"}}, `{"c":"red"}`},
		{"choose titled", client.NewSchema().ChooseTitled("env", client.ChoicesOf(envDev, envProd), client.Description("Where"), client.DefaultChoice("dev")),
			[][]string{{"Production"}}, `{"env":"prod"}`},
		{"choose many", client.NewSchema().ChooseMany("m", []string{"a", "b", "c"}, client.MinItems(1), client.MaxItems(2), client.DefaultChoices("a")),
			[][]string{{"c", "a"}}, `{"m":["a","c"]}`},
		{"choose many titled", client.NewSchema().ChooseManyTitled("o", []client.Choice{{Value: "u1", Title: "Ada"}, {Value: "u2", Title: "Linus"}}, client.Title("Owners"), client.MaxItems(2), client.DefaultChoices("u2")),
			[][]string{{"Ada", "Linus"}}, `{"o":["u1","u2"]}`},
		{"optional multi default", client.NewSchema().ChooseMany("m", []string{"a", "b"}, client.DefaultChoices("b"), client.Optional()), [][]string{{}}, `{"m":["b"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema, err := tc.build.Build()
			if err != nil {
				t.Fatal(err)
			}
			e, err := c.Create(t.Context(), client.Params{Message: "Builder check", RequestedSchema: schema})
			if err != nil {
				t.Fatalf("questiond refused %s: %v", schema, err)
			}
			reply(t, d.URL, e.ID, tc.answers...)
			res, err := c.Wait(t.Context(), e.ID)
			if err != nil || !res.Accepted() {
				t.Fatalf("Wait: %+v, %v", res, err)
			}
			got := sdkRoundTrip(t, schema, res.Content)
			if gotJSON, _ := json.Marshal(got); string(gotJSON) != tc.want {
				t.Fatalf("schema %s: the tool received %s, want %s", schema, gotJSON, tc.want)
			}
		})
	}
}

// sdkRoundTrip hands content to a real MCP Go SDK client as its answer to an
// elicitation with schema from a real server's tool, and returns what the
// tool received; it fails the test if the SDK refuses either.
func sdkRoundTrip(t *testing.T, schema json.RawMessage, content map[string]any) map[string]any {
	t.Helper()
	got, err := sdkCheck(t.Context(), schema, content)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sdkCheck runs the round trip on protocol 2025-11-25, where the SDK client
// checks the schema before answering, and client and server both validate
// the content against it.
func sdkCheck(ctx context.Context, schema json.RawMessage, content map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := mcptest.RoundTrip(ctx, schema, content)
	if err != nil {
		return nil, fmt.Errorf("schema %s or content %v: %w", schema, content, err)
	}
	if got.Action != "accept" {
		return nil, fmt.Errorf("the tool received %q", got.Action)
	}
	return got.Content, nil
}

// The SDK check is not a formality: content outside the schema, and a
// schema outside the subset, are refused.
func TestSDKRoundTripCanFail(t *testing.T) {
	schema, err := client.NewSchema().Integer("i", client.Max(3)).Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdkCheck(t.Context(), schema, map[string]any{"i": 9.0}); err == nil {
		t.Fatal("content above the maximum passed the SDK")
	}
	nested := json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","properties":{}}}}`)
	if _, err := sdkCheck(t.Context(), nested, map[string]any{}); err == nil {
		t.Fatal("a nested schema passed the SDK")
	}
}

func inf() float64 { return math.Inf(1) }

func TestBuildReportsMisuse(t *testing.T) {
	titled := []client.Choice{{Value: "a", Title: "A"}}
	for _, tc := range []struct {
		name  string
		build *client.SchemaBuilder
		want  []string
	}{
		{"no properties", client.NewSchema(), []string{"no properties"}},
		{"empty name", client.NewSchema().String(""), []string{"property 1: empty name"}},
		{"duplicate key", client.NewSchema().String("x").Bool("x"), []string{`property "x": duplicate name`}},
		{"default outside the enum", client.NewSchema().Choose("c", []string{"a", "b"}, client.DefaultChoice("z")), []string{`property "c": default "z" is not one of the choices`}},
		{"titled default outside", client.NewSchema().ChooseTitled("c", titled, client.DefaultChoice("A")), []string{`property "c": default "A" is not one of the choices`}},
		{"multi default outside", client.NewSchema().ChooseMany("m", []string{"a"}, client.DefaultChoices("a", "b")), []string{`property "m": default "b" is not one of the choices`}},
		{"multi default twice", client.NewSchema().ChooseMany("m", []string{"a"}, client.DefaultChoices("a", "a")), []string{`"a" is listed twice`}},
		{"min > max", client.NewSchema().Integer("i", client.Min(5), client.Max(1)), []string{`property "i": minimum 5 is greater than maximum 1`}},
		{"number default out of range", client.NewSchema().Number("n", client.Max(1), client.DefaultNumber(2)), []string{`property "n": default 2 is outside`}},
		{"integer not whole", client.NewSchema().Integer("i", client.DefaultNumber(1.5)), []string{`property "i": default 1.5 of an integer property is not a whole number`}},
		{"not finite", client.NewSchema().Number("n", client.Min(inf())), []string{`property "n": minimum +Inf is not a finite number`}},
		{"minLength > maxLength", client.NewSchema().String("s", client.MinLength(5), client.MaxLength(2)), []string{`property "s": minLength 5 is greater than maxLength 2`}},
		{"negative length", client.NewSchema().String("s", client.MaxLength(-1)), []string{"maxLength -1 is negative"}},
		{"default too long", client.NewSchema().String("s", client.MaxLength(2), client.DefaultString("abc")), []string{`default "abc" is longer than maxLength 2`}},
		{"default not an email", client.NewSchema().String("s", client.Email(), client.DefaultString("Ada <ada@x.org>")), []string{"is not a valid email"}},
		{"two formats", client.NewSchema().String("s", client.Email(), client.URI()), []string{`format "uri" is given after format "email"`}},
		{"option twice", client.NewSchema().Bool("b", client.Title("B"), client.Title("C")), []string{`property "b": title is given twice`}},
		{"empty title", client.NewSchema().Bool("b", client.Title(" ")), []string{`property "b": empty title`}},
		{"nil option", client.NewSchema().Bool("b", nil), []string{`property "b": option 1 is nil`}},
		{"no choices", client.NewSchema().Choose("c", nil), []string{`property "c": no choices`}},
		{"empty choice", client.NewSchema().ChooseMany("m", []string{"a", ""}), []string{`property "m": choice 2 has an empty value`}},
		{"duplicate choice", client.NewSchema().Choose("c", []string{"a", "a"}), []string{`property "c": choice "a" is listed twice`}},
		{"titled without title", client.NewSchema().ChooseTitled("c", []client.Choice{{Value: "a"}}), []string{`property "c": choice "a" has no title`}},
		{"duplicate title", client.NewSchema().ChooseManyTitled("m", []client.Choice{{Value: "a", Title: "A"}, {Value: "b", Title: "A"}}), []string{`title "A" is used by two choices`}},
		{"control characters", client.NewSchema().Choose("c", []string{"a\x1b[2J"}), []string{"control characters"}},
		{"minItems > maxItems", client.NewSchema().ChooseMany("m", []string{"a", "b"}, client.MinItems(2), client.MaxItems(1)), []string{"minItems 2 is greater than maxItems 1"}},
		{"minItems > choices", client.NewSchema().ChooseManyTitled("m", titled, client.MinItems(2)), []string{"minItems 2 exceeds the 1 choices"}},
		{"default picks beyond maxItems", client.NewSchema().ChooseMany("m", []string{"a", "b"}, client.MaxItems(1), client.DefaultChoices("a", "b")), []string{"more than maxItems 1"}},
		{"every problem reported", client.NewSchema().String("").Integer("i", client.Min(2), client.Max(1)).Choose("i", nil),
			[]string{"property 1: empty name", `property "i": minimum 2`, `property "i": duplicate name`, `property "i": no choices`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema, err := tc.build.Build()
			if err == nil {
				t.Fatalf("Build made %s", schema)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("Build error %q does not say %q", err, want)
				}
			}
		})
	}
}
