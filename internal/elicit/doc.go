// Package elicit turns an MCP elicitation (form mode: a message and a flat
// requestedSchema) into OpenCode questions, and turns the operator's answers
// back into typed ElicitResult content that satisfies the schema. It is pure:
// no I/O, no goroutines, and a Form is safe for concurrent use.
//
// # Flow
//
//	form, err := elicit.NewForm(message, requestedSchema, elicit.Options{}) // *SchemaError
//	// show form.Questions; later, on POST /question/{id}/reply:
//	content, err := form.Convert(answers) // *AnswerError
//
// # Mapping
//
// Every property becomes one question, in the order of the JSON document.
//
//	property schema                        question                                    answer            content value
//	-------------------------------------  ------------------------------------------  ----------------  -------------------------
//	string (minLength, maxLength,          free text: options [], custom omitted       one text          string (trimmed)
//	  format, pattern)                       (= allowed); text says e.g. "email
//	                                         address", "1–40 characters"
//	number (minimum, maximum)              free text; "number between 0 and 1"         one number        float64
//	integer (minimum, maximum)             free text; "integer between 1 and 10"       one integer       int64
//	boolean                                options Yes, No; custom false               Yes/No            bool
//	string + enum                          one option per value; custom false          one label         string (the enum value)
//	string + enum + enumNames (legacy)     options labelled by enumNames               one label         string (the enum value)
//	string + oneOf [{const, title}]        options labelled by title                   one label         string (the const)
//	array + items {type string, enum}      options per value; multiple true,           any labels        []string, unique, in
//	                                         custom false                                                  schema order
//	array + items.anyOf [{const, title}]   options labelled by title; multiple true,   any labels        []string of consts
//	  (items.oneOf accepted as synonym)      custom false
//
// The header is the title (or the key), on one line, cut to
// Options.HeaderLimit runes ("…" marks a cut). The question text is the
// description (or title, or key), then the expected form and the default in
// parentheses, then " (required)" for required properties. The elicitation
// message leads the first question, followed by a blank line. An option's
// description shows the underlying value when it differs from the label, and
// "(default)" on the default option(s). Every shown text — message,
// header, question, option labels and descriptions — passes through Shown:
// control characters other than newline and tab, and the bidirectional
// embedding, override and isolate controls, become U+FFFD, and the
// bidirectional marks are removed, so an agent can neither drive the
// operator's terminal nor make text read other than it is. Option labels
// must not contain control characters; a label that loses bidirectional
// controls is answered by its shown form (or as written) and still gives
// the option's value, untouched.
//
// # Answers
//
// answers[i] answers Questions[i]; there must be exactly one answer list per
// question. Entries that are empty or only whitespace are dropped first; an
// answer left with no entries is empty. An empty answer gives the property's
// default when it has one (so a required property with a default is always
// in the content), is omitted for an optional property, and is an error for
// a required one (a required multi-select needs at least one pick). Every
// other kind needs exactly one entry. Entries must be valid UTF-8.
//
//   - Strings are trimmed of surrounding whitespace, then checked: length in
//     runes (as JSON Schema counts), format, pattern.
//   - Numbers are trimmed and must match [+-]digits[.digits][e[+-]digits]
//     (".5" and "5." are fine): no hex, no underscores or thousands
//     separators, no Inf or NaN. They must fit a float64 without overflowing
//     or rounding to zero; -0 becomes 0. Then minimum and maximum apply.
//   - Integers follow the same syntax and must be exactly whole ("3.0" and
//     "1e3" are fine, "3.5" is not) and within ±2^53, decided on the decimal
//     text, not on a rounded float.
//   - Booleans accept Yes/No and true/false, in any case.
//   - An enum entry names an option by its exact label, else its exact value,
//     else (after trimming) either of those, else a case-insensitive label
//     when exactly one label matches. Otherwise the error lists the labels.
//     Multi-select picks are de-duplicated, must respect minItems/maxItems,
//     and are returned in schema order.
//
// Formats are checked strictly, although the MCP SDKs do not assert them:
// email is a bare addr-spec (no display name, no angle brackets), uri is an
// absolute RFC 3986 URI with a scheme (ASCII only, valid %-escapes), date is
// YYYY-MM-DD naming a real day, date-time is RFC 3339 ("T" and "Z" in either
// case; no leap second). A pattern is a Go (RE2) regular expression matched
// anywhere in the string, as JSON Schema and jsonschema-go do.
//
// Every failure is an *AnswerError naming the question index, its header
// and the problem, e.g. `answers[3] ("Replicas"): "abc" is not an integer`.
//
// # Schema rules
//
// ParseSchema accepts exactly the MCP subset, for every protocol version up
// to 2026-07-28, and reports the first violation as a *SchemaError naming the
// JSON path and the rule, e.g.
// `requestedSchema.properties.address: nested objects are not allowed in
// elicitation schemas`. There is no lenient mode.
//
// The input must be one JSON object (valid UTF-8, no byte order mark,
// nothing after it, nested at most 32 levels, no duplicate key in any
// object) with "type": "object", "properties" (at least one, at most
// Options.MaxProperties, never silently truncated) and optional "required"
// (declared names, each once). Each property needs a single "type" string.
// Enums need at least one value and at most Options.MaxOptions; values
// must be non-empty strings, labels
// must not be blank or hold control characters, and neither may repeat
// (labels that differ only in case are fine). enumNames must pair up with enum one to one. Counts
// (minLength, maxItems, …) are non-negative integers; min must not exceed
// max; an integer range must contain an integer; minItems must not exceed the
// number of choices. A default must have the property's JSON type and pass
// its own rules (in the enum, in range, length, format, pattern, unique picks
// within minItems/maxItems).
//
// Tolerated besides the subset, never changing the outcome:
//
//   - at the root: "$schema" (only the 2020-12 and draft-07 URIs, the
//     dialects the Go SDK's validator accepts), "title", "description",
//     "$comment", and "additionalProperties": false;
//   - on properties, items and titled options: the annotations "$comment"
//     (a string), "examples" (an array) and "deprecated" (a boolean);
//   - anywhere: "x-*" extensions;
//   - on multi-selects: "uniqueItems": true.
//
// "pattern" on strings is honoured (an RE2 regular expression; an invalid one
// is a schema error) because the Go SDK enforces it. items.oneOf is read as
// items.anyOf. Every other keyword ($ref, allOf, anyOf on a property, not,
// const, multipleOf, exclusiveMinimum, nullable, …), a keyword of one kind
// used on another (minimum on a string), "type" inside titled multi-select
// items, type arrays such as ["string","null"], nested properties and items
// of objects are rejected, naming the keyword.
package elicit
