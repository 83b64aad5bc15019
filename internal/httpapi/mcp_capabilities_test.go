package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// The tool list of an MCP session never changes, so initialize does not
// offer tools/list_changed notifications.
func TestMCPToolsListNeverChanges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	res := mcpRaw(t, h, http.MethodPost, "/mcp", initializeBody)
	if res.Status != http.StatusOK {
		t.Fatalf("initialize: %d %s", res.Status, res.Body)
	}
	body := string(res.Body)
	if i := strings.Index(body, "{"); i > 0 {
		body = body[i:] // an event-stream answer: the JSON after "data: "
	}
	body = strings.TrimSpace(strings.SplitN(body, "\n", 2)[0])
	var init struct {
		Result struct {
			Capabilities struct {
				Tools *struct {
					ListChanged bool `json:"listChanged"`
				} `json:"tools"`
			} `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &init); err != nil {
		t.Fatalf("initialize answer %q: %v", res.Body, err)
	}
	if init.Result.Capabilities.Tools == nil || init.Result.Capabilities.Tools.ListChanged {
		t.Errorf("tools capability %+v in %s, want tools without listChanged", init.Result.Capabilities.Tools, res.Body)
	}
}
