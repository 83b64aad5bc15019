// Package api holds questiond's OpenAPI 3.1 document. openapi.yaml is the
// source; openapi.json is generated from it (go generate ./api) and embedded,
// so the daemon serves GET /doc without linking a YAML or OpenAPI library.
package api

//go:generate go test -run TestGenerate -update .

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"sync"
)

//go:embed openapi.json
var generated []byte

var compact = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, generated); err != nil {
		// TestGenerate and TestJSON fail first: the file is written by json.Indent.
		panic("api: embedded openapi.json is not JSON: " + err.Error())
	}
	return buf.Bytes()
})

// JSON returns the OpenAPI document as compact JSON. The caller owns the
// returned slice.
func JSON() []byte { return bytes.Clone(compact()) }
