package httpapi_test

// A session asks through its parent only while the parent may ask: a parent
// on "none" is refused when the child is set (400 naming parentSessionID),
// and a child whose parent turned "none" later is refused when it asks
// (403), over HTTP and MCP alike, with nothing stored or announced.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/httpapi"
)

func TestAParentOnNoneIsRefusedWhenSetAndWhenAsked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	putSession(t, h, "ses_autopilot", map[string]any{"questionCapability": "none"})
	res := putSession(t, h, "ses_sub", map[string]any{"questionCapability": "parent", "parentSessionID": "ses_autopilot"})
	wantBadRequestAt(t, "PUT parent of a none session", res, "parentSessionID")
	if !strings.Contains(string(res.Body), `ses_autopilot may not ask questions`) {
		t.Errorf("the refusal does not say why: %s", res.Body)
	}
	wantSessionBody(t, "GET after the refusal", h.do(http.MethodGet, "/sessions/ses_sub", nil),
		http.StatusOK, `{"id":"ses_sub","questionCapability":"user","configured":false}`)

	// Set while the parent may ask, then the parent turns none.
	putSession(t, h, "ses_lead", map[string]any{"questionCapability": "user"})
	if res := putSession(t, h, "ses_sub", map[string]any{"questionCapability": "parent", "parentSessionID": "ses_lead"}); res.Status != http.StatusCreated {
		t.Fatalf("PUT parent of a user session: %d %s", res.Status, res.Body)
	}
	cs := mcpConnect(t, h, "/mcp?session=ses_sub", nil, nil)
	putSession(t, h, "ses_lead", map[string]any{"questionCapability": "none"})

	want := `session ses_sub asks through its parent session ses_lead, whose question capability is \"none\"`
	for _, path := range []string{"/elicitations", "/elicit"} {
		res := h.do(http.MethodPost, path, askingForm("ses_sub"))
		if res.Status != http.StatusForbidden || !strings.Contains(string(res.Body), want) {
			t.Errorf("POST %s from the child: %d %s, want 403 naming the parent", path, res.Status, res.Body)
		}
	}
	call := callNow(t, cs, "ask_parent_question", twoPrompts())
	if call.err != nil || call.res == nil || !call.res.IsError ||
		!strings.Contains(call.res.Content[0].(*mcp.TextContent).Text, strings.ReplaceAll(want, `\"`, `"`)) {
		t.Errorf("the child's MCP tool: %+v, %v; want a tool error naming the parent", call.res, call.err)
	}
	if listed := h.do(http.MethodGet, "/question", nil); string(listed.Body) != "[]" {
		t.Errorf("refused questions were listed: %s", listed.Body)
	}

	// The parent may ask again: so may the child, under the parent.
	putSession(t, h, "ses_lead", map[string]any{"questionCapability": "user"})
	if c := h.create(askingForm("ses_sub")); c.SessionID != "ses_lead" {
		t.Errorf("the child's question is listed under %q, want ses_lead", c.SessionID)
	}
}
