package ask_test

import (
	"slices"
	"testing"

	"github.com/questiond/questiond/internal/testkit"
)

// The question's life lies below every protocol: ask imports no net/http
// of its own, and nothing of httpapi (or its packages) or sse even through
// another package; metrics, which counts what the protocols do, does not
// reach for httpapi either. Within httpapi, the routes use the console, the
// MCP server and the middleware, which share wire and know nothing of each
// other or of the routes. Dependencies point one way.
func TestDependenciesPointOneWay(t *testing.T) {
	const module = "github.com/questiond/questiond/internal/"
	own := testkit.GoList(t, `{{join .Imports " "}}`, ".")
	if !slices.Contains(own, module+"pending") {
		t.Fatalf("go list names no %spending among ask's imports, so it read something else: %q", module, own)
	}
	if slices.Contains(own, "net/http") {
		t.Errorf("internal/ask imports net/http: it speaks no protocol")
	}
	httpapi := []string{module + "httpapi", module + "httpapi/console", module + "httpapi/mcpserver",
		module + "httpapi/middleware", module + "httpapi/wire"}
	for _, c := range []struct {
		pkg       string
		forbidden []string
	}{
		{".", append([]string{module + "sse"}, httpapi...)},
		{"../metrics", httpapi},
		// Within httpapi: httpapi -> console, mcpserver, middleware -> wire -> ask.
		{"../httpapi/wire", httpapi},
		{"../httpapi/middleware", []string{module + "httpapi", module + "httpapi/console", module + "httpapi/mcpserver"}},
		{"../httpapi/console", []string{module + "httpapi", module + "httpapi/mcpserver", module + "httpapi/middleware"}},
		{"../httpapi/mcpserver", []string{module + "httpapi", module + "httpapi/console", module + "httpapi/middleware"}},
	} {
		deps := testkit.GoList(t, `{{join .Deps " "}}`, c.pkg)
		for _, f := range c.forbidden {
			if slices.Contains(deps, f) {
				t.Errorf("%s depends on %s", c.pkg, f)
			}
		}
	}
}
