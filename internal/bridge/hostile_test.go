package bridge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/bridge"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// hostileText carries what an upstream (or a host) could use to hide or
// fake text on an operator's screen: a terminal escape that clears it, a
// right-to-left override, a zero-width isolate, markup and a newline.
const hostileText = "ok\x1b[2J\x1b]0;pwned\x07 \u202egnp.exe\u2066 <img src=x onerror=alert(1)>\nnext"

// hostileLabel is hostileText without control characters: questiond
// refuses those in option labels, which are answers too (-32602, nothing
// asked).
const hostileLabel = "\u202egnp.exe\u2066 <img src=x onerror=alert(1)>"

// unsafeRune reports a rune an operator's screen must never receive as it
// is: a control character (newlines aside, in text that may have lines) or
// a bidirectional control.
func unsafeRune(r rune, lines bool) bool {
	if r == '\n' && lines {
		return false
	}
	return unicode.IsControl(r) || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') || r == '\u200e' || r == '\u200f'
}

func checkShownAsText(t *testing.T, what, s string, lines bool) {
	t.Helper()
	if i := strings.IndexFunc(s, func(r rune) bool { return unsafeRune(r, lines) }); i >= 0 {
		t.Errorf("%s carries %q at %d: %q", what, []rune(s[i:])[0], i, s)
	}
	if lines && !strings.Contains(s, "<img src=x onerror=alert(1)>") { // titles are one shortened line
		t.Errorf("%s lost the markup, which must be shown as the text it is: %q", what, s)
	}
}

// Hostile text from an upstream (its message, its property and option
// titles) and from a host (its name, in the session's title) reaches the
// operators as text: no control or bidirectional characters, markup kept
// as the characters it is written with, everywhere operators read it.
func TestHostileTextReachesOperatorsAsText(t *testing.T) {
	base, ops, hostEnd, upstreamEnd, _ := rigUp(t, bridge.Options{Name: "deployer", SessionID: "ses_hostile"})
	server := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{` +
		`"pick":{"type":"string","title":` + quote(hostileText) + `,"description":` + quote(hostileText) + `,` +
		`"oneOf":[{"const":"a","title":` + quote(hostileLabel) + `},{"const":"b","title":"B"}]}},"required":["pick"]}`)
	received := mcptest.ElicitingTool(server, "deploy", hostileText, schema, done)
	serve(t, server, upstreamEnd)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: hostileText, Version: "1"}, nil).
		Connect(t.Context(), hostEnd, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	out := mcptest.CallAsync(t, t.Context(), cs, "deploy", nil)
	q := ops.Asked()
	for _, info := range q.Questions {
		checkShownAsText(t, "the question", info.Question, true)
	}
	for path, lines := range map[string]bool{"/question": true, "/session/" + q.SessionID: false} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var shown any
		if err := json.Unmarshal(body, &shown); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
		walkStrings(shown, func(s string) {
			if strings.Contains(s, "onerror") {
				checkShownAsText(t, "GET "+path, s, lines)
			}
		})
	}
	if title := sessionTitle(t, base, q.SessionID); !strings.HasPrefix(title, "[?] deployer via ok") {
		t.Errorf("the session's title %q does not name the host as it named itself, made safe", title)
	}
	ops.Reply(q, map[string][]string{q.Questions[0].Header: {"B"}})
	if o := mcptest.AwaitCall(t, out); o.Err != nil || o.Res.IsError {
		t.Fatalf("CallTool: %v %+v", o.Err, o.Res)
	}
	if got := <-received; got.Action != "accept" || got.Content["pick"] != "b" {
		t.Fatalf("the upstream received %+v", got)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// walkStrings calls f with every string in v, a decoded JSON value.
func walkStrings(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case []any:
		for _, e := range v {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range v {
			walkStrings(e, f)
		}
	}
}
