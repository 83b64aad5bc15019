package elicit_test

// Schemas shared by the tests, the fuzz seeds and the benchmarks.

// combinedSchema is the fixture of mcp-elicitation.md §2.3: every property
// shape of the subset in one form.
const combinedSchema = `{
  "type": "object",
  "properties": {
    "name":    { "type": "string", "title": "Name", "minLength": 1, "maxLength": 40 },
    "contact": { "type": "string", "title": "Contact email", "format": "email" },
    "start":   { "type": "string", "title": "Start date", "format": "date" },
    "replicas":{ "type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10, "default": 2 },
    "ratio":   { "type": "number", "title": "Canary ratio", "minimum": 0, "maximum": 1 },
    "dryRun":  { "type": "boolean", "title": "Dry run", "default": true },
    "env":     { "type": "string", "title": "Environment", "enum": ["dev", "staging", "prod"], "default": "dev" },
    "region":  { "type": "string", "title": "Region",
                 "oneOf": [ { "const": "eu-west-1", "title": "Ireland" }, { "const": "us-east-1", "title": "Virginia" } ] },
    "tier":    { "type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"] },
    "tags":    { "type": "array", "title": "Tags", "items": { "type": "string", "enum": ["web", "db", "cache"] }, "maxItems": 2 },
    "owners":  { "type": "array", "title": "Owners", "minItems": 1,
                 "items": { "anyOf": [ { "const": "u1", "title": "Ada" }, { "const": "u2", "title": "Linus" } ] } }
  },
  "required": ["name", "env", "owners"]
}`

// seedRFCSchema is the multi-question example of RFC-0015/RFC-0010, whose
// tool names its properties q0, q1, ….
const seedRFCSchema = `{
  "type": "object",
  "properties": {
    "q0": { "type": "string", "title": "Model", "description": "Equipment model?", "enum": ["SY215C", "SY365H"] },
    "q1": { "type": "array", "title": "Symptoms", "description": "Select symptoms",
            "items": { "type": "string", "enum": ["Black smoke", "Low power"],
                       "x-option-descriptions": { "Black smoke": "", "Low power": "" } },
            "uniqueItems": true }
  },
  "required": ["q0"]
}`

// namedKeysSchema is seedRFCSchema with meaningful property names.
const namedKeysSchema = `{
  "type": "object",
  "properties": {
    "model":    { "type": "string", "title": "Model", "description": "Equipment model?", "enum": ["SY215C", "SY365H"] },
    "symptoms": { "type": "array", "title": "Symptoms", "description": "Select symptoms",
                  "items": { "type": "string", "enum": ["Black smoke", "Low power"] }, "uniqueItems": true }
  },
  "required": ["model"]
}`

// enumsSchema mirrors the conformance scenario elicitation-sep1330-enums.
const enumsSchema = `{
  "type": "object",
  "properties": {
    "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
    "titledSingle": { "type": "string", "oneOf": [
      { "const": "value1", "title": "First Option" },
      { "const": "value2", "title": "Second Option" },
      { "const": "value3", "title": "Third Option" } ] },
    "legacyEnum": { "type": "string", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"] },
    "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
    "titledMulti": { "type": "array", "items": { "anyOf": [
      { "const": "value1", "title": "First Choice" },
      { "const": "value2", "title": "Second Choice" },
      { "const": "value3", "title": "Third Choice" } ] } }
  }
}`

// defaultsSchema mirrors the conformance scenario
// elicitation-sep1034-client-defaults: all optional, all with defaults.
const defaultsSchema = `{
  "type": "object",
  "properties": {
    "name":     { "type": "string", "description": "User name", "default": "John Doe" },
    "age":      { "type": "integer", "description": "User age", "default": 30 },
    "score":    { "type": "number", "description": "User score", "default": 95.5 },
    "status":   { "type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active" },
    "verified": { "type": "boolean", "description": "Verification status", "default": true }
  }
}`

// oneOfMultiSchema is a titled multi-select written with items.oneOf, the
// spelling of the SEP-1330 draft.
const oneOfMultiSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "colors": { "type": "array", "title": "Colors", "minItems": 1, "maxItems": 2,
      "items": { "oneOf": [ { "const": "#f00", "title": "Red" }, { "const": "#0f0", "title": "Green" }, { "const": "#00f", "title": "Blue" } ] },
      "default": ["#0f0"] }
  },
  "required": ["colors"]
}`

// tenPropertySchema is the benchmark workload: ten properties of mixed kinds.
const tenPropertySchema = `{
  "type": "object",
  "properties": {
    "name":     { "type": "string", "title": "Name", "minLength": 1, "maxLength": 40 },
    "email":    { "type": "string", "title": "Email", "format": "email" },
    "start":    { "type": "string", "title": "Start", "format": "date" },
    "replicas": { "type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10, "default": 2 },
    "ratio":    { "type": "number", "title": "Ratio", "minimum": 0, "maximum": 1 },
    "dryRun":   { "type": "boolean", "title": "Dry run", "default": true },
    "env":      { "type": "string", "title": "Environment", "enum": ["dev", "staging", "prod"] },
    "region":   { "type": "string", "title": "Region", "oneOf": [ { "const": "eu-west-1", "title": "Ireland" }, { "const": "us-east-1", "title": "Virginia" } ] },
    "tags":     { "type": "array", "title": "Tags", "items": { "type": "string", "enum": ["web", "db", "cache"] } },
    "owners":   { "type": "array", "title": "Owners", "items": { "anyOf": [ { "const": "u1", "title": "Ada" }, { "const": "u2", "title": "Linus" } ] } }
  },
  "required": ["name", "email", "env"]
}`

// tenPropertyAnswers answers tenPropertySchema.
var tenPropertyAnswers = [][]string{
	{"api"}, {"ops@example.com"}, {"2026-03-01"}, {"3"}, {"0.25"},
	{"No"}, {"prod"}, {"Ireland"}, {"web", "db"}, {"Ada"},
}
