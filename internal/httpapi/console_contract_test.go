package httpapi_test

// Contract tests: one per console route the OpenCode TUI reads. Each decodes
// the live JSON generically and requires every field the TUI (1.18.33)
// reads, with its JSON type, as the spike's field list names them
// (shared/reference/tui-console §5), so a refactor that drops or retypes
// one fails here before it fails in the TUI.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// jsonShape lists fields as paths and the JSON type each must have. A path
// is dot-separated keys; "[]" after a key (or alone, for the value itself)
// means every element of a non-empty array, "{}" every value of a
// non-empty object. A leading "?" marks a field OpenCode itself may omit:
// absent is fine, present must have the type. Types: string, number,
// integer, boolean, object, array.
type jsonShape map[string]string

// requireShape checks v (decoded JSON) against shape.
func requireShape(t *testing.T, what string, v any, shape jsonShape) {
	t.Helper()
	for path, kind := range shape {
		optional := strings.HasPrefix(path, "?")
		for _, problem := range shapeProblems(v, strings.Split(strings.TrimPrefix(path, "?"), "."), kind, optional, "") {
			t.Errorf("%s: %s", what, problem)
		}
	}
}

func shapeProblems(v any, path []string, kind string, optional bool, at string) []string {
	if len(path) == 0 {
		if !hasJSONType(v, kind) {
			return []string{fmt.Sprintf("%s is %s, want a JSON %s", orRoot(at), describeJSON(v), kind)}
		}
		return nil
	}
	key, each := path[0], ""
	for _, suffix := range []string{"[]", "{}"} {
		if k, ok := strings.CutSuffix(key, suffix); ok {
			key, each = k, suffix
		}
	}
	if key != "" {
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %s, want an object with %q", orRoot(at), describeJSON(v), key)}
		}
		if at != "" {
			at += "."
		}
		at += key
		child, present := obj[key]
		if !present {
			if optional && len(path) == 1 && each == "" {
				return nil
			}
			return []string{at + " is missing"}
		}
		v = child
	}
	var children []any
	switch each {
	case "":
		return shapeProblems(v, path[1:], kind, optional, at)
	case "[]":
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return []string{fmt.Sprintf("%s is %s, want a non-empty array", orRoot(at), describeJSON(v))}
		}
		children = list
	case "{}":
		obj, ok := v.(map[string]any)
		if !ok || len(obj) == 0 {
			return []string{fmt.Sprintf("%s is %s, want a non-empty object", orRoot(at), describeJSON(v))}
		}
		for _, child := range obj {
			children = append(children, child)
		}
	}
	var problems []string
	for i, child := range children {
		problems = append(problems, shapeProblems(child, path[1:], kind, optional, fmt.Sprintf("%s%s%d%s", at, each[:1], i, each[1:]))...)
	}
	return problems
}

func hasJSONType(v any, kind string) bool {
	switch kind {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	panic("unknown JSON type " + kind)
}

func describeJSON(v any) string {
	data, _ := json.Marshal(v)
	if len(data) > 60 {
		data = append(data[:57], "..."...)
	}
	return string(data)
}

func orRoot(at string) string {
	if at == "" {
		return "the body"
	}
	return at
}

// getJSON is the operator's GET of path, decoded generically.
func (c *console) getJSON(path string) any {
	c.t.Helper()
	var v any
	c.get(path, &v)
	return v
}

// What the TUI reads of a provider (its provider and model pickers, the
// context-limit and cost columns).
var providerShape = jsonShape{
	"id": "string", "name": "string",
	"models{}.id": "string", "models{}.name": "string", "models{}.limit.context": "number",
	"models{}.cost": "object", "models{}.cost.input": "number", "models{}.cost.output": "number",
}

func prefixed(prefix string, shape jsonShape) jsonShape {
	out := jsonShape{}
	for path, kind := range shape {
		optional := strings.HasPrefix(path, "?")
		path = prefix + "." + strings.TrimPrefix(path, "?")
		if optional {
			path = "?" + path
		}
		out[path] = kind
	}
	return out
}

func merged(shapes ...jsonShape) jsonShape {
	out := jsonShape{}
	for _, s := range shapes {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

func TestConsoleContractConfig(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	config := c.getJSON("/config")
	requireShape(t, "GET /config", config, jsonShape{"": "object"})
}

func TestConsoleContractConfigProviders(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	body := c.getJSON("/config/providers")
	requireShape(t, "GET /config/providers", body, merged(prefixed("providers[]", providerShape), jsonShape{"default{}": "string"}))
	wantQuestiondProvider(t, "GET /config/providers", body, "providers")
}

func TestConsoleContractProvider(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	body := c.getJSON("/provider")
	requireShape(t, "GET /provider", body, merged(prefixed("all[]", providerShape), jsonShape{"default{}": "string", "connected[]": "string"}))
	wantQuestiondProvider(t, "GET /provider", body, "all")
	if connected := body.(map[string]any)["connected"]; describeJSON(connected) != `["questiond"]` {
		t.Errorf("GET /provider: connected %s", describeJSON(connected))
	}
}

// wantQuestiondProvider checks the one provider and model are questiond's,
// so nobody takes the console for a model that runs prompts.
func wantQuestiondProvider(t *testing.T, route string, body any, key string) {
	t.Helper()
	obj := body.(map[string]any)
	list, _ := obj[key].([]any)
	if len(list) != 1 {
		t.Fatalf("%s: %d providers, want questiond's only", route, len(list))
	}
	p := list[0].(map[string]any)
	models, _ := p["models"].(map[string]any)
	model, _ := models["operator-console"].(map[string]any)
	if p["id"] != "questiond" || p["name"] != "questiond" || len(models) != 1 || model["id"] != "operator-console" ||
		!strings.Contains(fmt.Sprint(model["name"]), "questiond") {
		t.Errorf("%s: provider %s, want questiond's with its one operator-console model", route, describeJSON(p))
	}
	if def := describeJSON(obj["default"]); def != `{"questiond":"operator-console"}` {
		t.Errorf("%s: default %s", route, def)
	}
}

func TestConsoleContractAgent(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	body := c.getJSON("/agent")
	requireShape(t, "GET /agent", body, jsonShape{"[].name": "string", "[].mode": "string", "[].hidden": "boolean",
		"[].permission": "array", "[].options": "object"})
	full, _ := json.Marshal(body)
	if got := string(full); !strings.Contains(got, `"name":"questiond"`) || !strings.Contains(got, `"mode":"primary"`) ||
		!strings.Contains(got, `"hidden":false`) || len(body.([]any)) != 1 {
		t.Errorf("GET /agent = %s, want one visible primary agent named questiond", got)
	}
}

// What the TUI reads of a session; OpenCode omits parentID for root sessions
// and compacting and workspaceID unless set.
var sessionShape = jsonShape{
	"id": "string", "slug": "string", "projectID": "string", "directory": "string", "path": "string",
	"title": "string", "version": "string", "time.created": "integer", "time.updated": "integer",
	"?parentID": "string", "?time.compacting": "integer", "?workspaceID": "string",
}

// askInSession asks one question in session ses_contract and answers or
// dismisses it as ending says ("" leaves it pending).
func (c *console) askInSession(ending string) string {
	c.t.Helper()
	id := c.ask(alphaToken, map[string]any{"sessionID": "ses_contract", "directory": "/work/contract"})
	var res response
	switch ending {
	case "reply":
		res = c.operator(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"SY215C"}, {"Low power"}}})
	case "reject":
		res = c.operator(http.MethodPost, "/question/"+id+"/reject", nil)
	default:
		return id
	}
	if res.Status != http.StatusOK {
		c.t.Fatalf("%s %s: %d %s", ending, id, res.Status, res.Body)
	}
	return id
}

func TestConsoleContractSession(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	c.askInSession("")
	requireShape(t, "GET /session/{id}", c.getJSON("/session/ses_contract"), sessionShape)
}

func TestConsoleContractSessionList(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	c.askInSession("reply")
	c.ask(betaToken, nil) // a second session: beta's inbox
	body := c.getJSON("/session?roots=true&limit=100")
	requireShape(t, "GET /session", body, prefixed("[]", sessionShape))
	if n := len(body.([]any)); n != 2 {
		t.Errorf("GET /session lists %d sessions, want 2", n)
	}
}

func TestConsoleContractSessionStatus(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	c.askInSession("")
	body := c.getJSON("/session/status")
	requireShape(t, "GET /session/status", body, jsonShape{"{}.type": "string"})
	if got := describeJSON(body); got != `{"ses_contract":{"type":"busy"}}` {
		t.Errorf("GET /session/status = %s", got)
	}
}

func TestConsoleContractSessionMessages(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	c.askInSession("reply")
	c.askInSession("reject")
	c.askInSession("")
	body := c.getJSON("/session/ses_contract/message?limit=100")
	// What the TUI reads of every message: its info and parts.
	requireShape(t, "GET /session/{id}/message", body, jsonShape{
		"[].info.id": "string", "[].info.sessionID": "string", "[].info.role": "string",
		"[].info.time.created": "integer", "[].info.agent": "string", "[].info.modelID": "string",
		"[].info.providerID": "string", "[].info.parentID": "string", "[].info.cost": "number",
		"[].info.tokens.input": "number", "[].info.tokens.output": "number", "[].info.tokens.reasoning": "number",
		"[].info.tokens.cache.read": "number", "[].info.tokens.cache.write": "number",
		"[].info.path.cwd": "string", "[].info.path.root": "string",
		"?[].info.time.completed": "integer", "?[].info.finish": "string",
		"[].parts[].id": "string", "[].parts[].messageID": "string", "[].parts[].sessionID": "string", "[].parts[].type": "string",
	})
	messages := body.([]any)
	if len(messages) != 3 {
		t.Fatalf("%d messages, want 3", len(messages))
	}
	part := func(i int, typ string) any {
		for _, p := range messages[i].(map[string]any)["parts"].([]any) {
			if p.(map[string]any)["type"] == typ {
				return p
			}
		}
		t.Fatalf("message %d has no %s part: %s", i, typ, describeJSON(messages[i]))
		return nil
	}
	requireShape(t, "a text part", part(0, "text"), jsonShape{"text": "string"})
	tool := jsonShape{
		"tool": "string", "callID": "string", "state.status": "string", "state.time.start": "integer",
		"state.input.questions[].question": "string", "state.input.questions[].header": "string",
		"state.input.questions[].options[].label": "string", "state.input.questions[].options[].description": "string",
		"?state.input.questions[].multiple": "boolean", "?state.input.questions[].custom": "boolean",
	}
	requireShape(t, "an answered question's tool part", part(0, "tool"), merged(tool, jsonShape{
		"state.output": "string", "state.title": "string", "state.metadata.answers[]": "array", "state.time.end": "integer",
	}))
	requireShape(t, "a dismissed question's tool part", part(1, "tool"), merged(tool, jsonShape{"state.error": "string", "state.time.end": "integer"}))
	requireShape(t, "a pending question's tool part", part(2, "tool"), tool)
	for i, want := range []string{"completed", "error", "running"} {
		if got := part(i, "tool").(map[string]any)["state"].(map[string]any)["status"]; got != want {
			t.Errorf("message %d: tool status %v, want %s", i, got, want)
		}
	}
	// Ended messages say when and how they finished; the pending one does not.
	requireShape(t, "an ended message", messages[0], jsonShape{"info.time.completed": "integer", "info.finish": "string"})
	pendingInfo := messages[2].(map[string]any)["info"].(map[string]any)
	if _, ok := pendingInfo["finish"]; ok {
		t.Errorf("the pending message has a finish: %s", describeJSON(pendingInfo))
	}
}

// The checker itself: a dropped or retyped field is reported.
func TestConsoleContractCheckerCatchesDrift(t *testing.T) {
	t.Parallel()
	var body any
	if err := json.Unmarshal([]byte(`[{"id":"ses_1","time":{"created":1.5},"models":{"m":{"name":3}}}]`), &body); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shape jsonShape
		want  string
	}{
		{jsonShape{"[].title": "string"}, "[0].title is missing"},
		{jsonShape{"[].time.created": "integer"}, "[0].time.created is 1.5, want a JSON integer"},
		{jsonShape{"[].models{}.name": "string"}, "[0].models{0}.name is 3, want a JSON string"},
		{jsonShape{"[].parts[]": "object"}, "[0].parts is missing"},
	} {
		for path, kind := range tc.shape {
			problems := shapeProblems(body, strings.Split(path, "."), kind, false, "")
			if !slices.ContainsFunc(problems, func(p string) bool { return p == tc.want }) {
				t.Errorf("%s: problems %q, want %q", path, problems, tc.want)
			}
		}
	}
	if problems := shapeProblems(body, strings.Split("[].workspaceID", "."), "string", true, ""); len(problems) != 0 {
		t.Errorf("an optional absent field: %q", problems)
	}
}
