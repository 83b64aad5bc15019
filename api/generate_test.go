package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"

	"go.yaml.in/yaml/v4"
)

var update = flag.Bool("update", false, "rewrite openapi.json from openapi.yaml")

// TestGenerate is both the generator of openapi.json (with -update) and the
// check that the checked-in file is not stale.
func TestGenerate(t *testing.T) {
	source, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := yamlToJSON(source)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	got, err := os.ReadFile("openapi.json")
	if err != nil && !(*update && errors.Is(err, os.ErrNotExist)) {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	if !*update {
		t.Fatal("openapi.json is stale relative to openapi.yaml: run go generate ./api")
	}
	if err := os.WriteFile("openapi.json", want, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("rewrote openapi.json")
}

func TestJSONIsTheCompactGeneratedFile(t *testing.T) {
	var want bytes.Buffer
	if err := json.Compact(&want, generated); err != nil {
		t.Fatal(err)
	}
	got := JSON()
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("JSON() differs from the compacted openapi.json")
	}
	if bytes.ContainsAny(got, "\n\t") {
		t.Fatal("JSON() is not compact")
	}
	got[0] = 'x'
	if JSON()[0] != '{' {
		t.Fatal("JSON() hands out its own buffer")
	}
}

func TestYAMLToJSON(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"key order kept": {"b: 1\na: 2\n", `{"b":1,"a":2}`},
		"scalars":        {"s: '2.0'\nt: true\nn: null\ni: 0x10\nf: 1.5\nq: ^que\n", `{"s":"2.0","t":true,"n":null,"i":16,"f":1.5,"q":"^que"}`},
		"numeric keys":   {"'200': x\n404: y\n", `{"200":"x","404":"y"}`},
		"empty":          {"a: {}\nb: []\n", `{"a":{},"b":[]}`},
		"alias":          {"a: &x [1]\nb: *x\n", `{"a":[1],"b":[1]}`},
		"html kept":      {"a: <b> & c\n", `{"a":"<b> & c"}`},
		"block text":     {"a: |\n  x\n  y\n", `{"a":"x\ny\n"}`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := yamlToJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, got); err != nil {
				t.Fatal(err)
			}
			if compact.String() != tt.want {
				t.Fatalf("got %s, want %s", compact.String(), tt.want)
			}
		})
	}
	for _, bad := range []string{"a: 1\na: 2\n", "? [1]\n: x\n", "<<: {a: 1}\n", "a: .inf\n", "a: !!binary aGk=\n"} {
		if got, err := yamlToJSON([]byte(bad)); err == nil {
			t.Errorf("%q: got %s, want an error", bad, got)
		}
	}
}

// yamlToJSON converts a YAML document to indented JSON, keeping the key order
// of the source so the generated file reads like it.
func yamlToJSON(source []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	var out bytes.Buffer
	if err := writeJSON(&out, &doc); err != nil {
		return nil, err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("indent: %w", err)
	}
	indented.WriteByte('\n')
	return indented.Bytes(), nil
}

func writeJSON(out *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document, got %d", n.Line, len(n.Content))
		}
		return writeJSON(out, n.Content[0])
	case yaml.AliasNode:
		return writeJSON(out, n.Alias)
	case yaml.SequenceNode:
		out.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeJSON(out, item); err != nil {
				return err
			}
		}
		out.WriteByte(']')
		return nil
	case yaml.MappingNode:
		return writeObject(out, n)
	case yaml.ScalarNode:
		return writeScalar(out, n)
	}
	return fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}

func writeObject(out *bytes.Buffer, n *yaml.Node) error {
	seen := make(map[string]bool, len(n.Content)/2)
	out.WriteByte('{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode || key.ShortTag() == "!!merge" {
			return fmt.Errorf("line %d: only plain scalar keys are supported", key.Line)
		}
		if seen[key.Value] {
			return fmt.Errorf("line %d: duplicate key %q", key.Line, key.Value)
		}
		seen[key.Value] = true
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, key.Value)
		out.WriteByte(':')
		if err := writeJSON(out, value); err != nil {
			return err
		}
	}
	out.WriteByte('}')
	return nil
}

func writeScalar(out *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str":
		writeString(out, n.Value)
	case "!!null":
		out.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		out.WriteString(strconv.FormatBool(b))
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		out.WriteString(strconv.FormatInt(i, 10))
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		out.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		return fmt.Errorf("line %d: unsupported YAML tag %s", n.Line, n.ShortTag())
	}
	return nil
}

func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // a string always encodes
	out.Truncate(out.Len() - 1) // Encode ends with a newline
}
