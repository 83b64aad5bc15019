package bridge

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// On protocol 2026-07-28 a tool may ask for some of its arguments in
// headers too (SEP-2243: an "x-mcp-header" on a property of its input
// schema names an Mcp-Param-{Name} header), so that a gateway can route a
// call without reading its body; a server checks they match the body. The
// connection learns them from the tools/list results passing through it.

const (
	methodListTools   = "tools/list"
	headerParamPrefix = "Mcp-Param-"
)

// paramBinding is one argument a tool wants mirrored in a header.
type paramBinding struct {
	header string   // after headerParamPrefix
	path   []string // property names from the arguments object down
}

// learnTools keeps the param headers of the tools a tools/list result
// lists.
func (c *httpConn) learnTools(result json.RawMessage) {
	var res struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &res) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range res.Tools {
		if b := schemaBindings(t.InputSchema, nil, nil); len(b) > 0 {
			c.params[t.Name] = b
		} else {
			delete(c.params, t.Name)
		}
	}
}

// schemaBindings collects the x-mcp-header annotations of a schema's
// properties, nested objects' included.
func schemaBindings(schema json.RawMessage, prefix []string, out []paramBinding) []paramBinding {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	for name, raw := range s.Properties {
		path := append(append([]string(nil), prefix...), name)
		var p struct {
			Header string `json:"x-mcp-header"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Header != "" {
			out = append(out, paramBinding{header: p.Header, path: path})
		}
		out = schemaBindings(raw, path, out)
	}
	return out
}

// paramHeaders are the Mcp-Param headers of a tools/call: one for each
// argument the tool wants mirrored that the call gives as a string, a
// boolean or an integer (none for one absent or null).
func (c *httpConn) paramHeaders(r *jsonrpc.Request) map[string]string {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return nil
	}
	c.mu.Lock()
	bindings := c.params[p.Name]
	c.mu.Unlock()
	headers := map[string]string{}
	for _, b := range bindings {
		if v, ok := argumentAt(p.Arguments, b.path); ok {
			headers[headerParamPrefix+b.header] = v
		}
	}
	return headers
}

// argumentAt is the header value of the argument at path.
func argumentAt(args json.RawMessage, path []string) (string, bool) {
	raw := args
	for _, name := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return "", false
		}
		var ok bool
		if raw, ok = obj[name]; !ok {
			return "", false
		}
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return headerValue(v), true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= 1<<53-1 {
			return strconv.FormatInt(int64(v), 10), true
		}
	}
	return "", false
}
