package ui

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/questiond/questiond/internal/ui/inline"
)

// tuiTitle is the title the TUI lists session under (GET /session/{id}),
// without its mark of a waiting session and with markdown markers taken out,
// as the page renders them.
func (d *daemon) tuiTitle(session, directory string) string {
	d.t.Helper()
	path := "/session/" + session
	if directory != "" {
		path += "?directory=" + directory
	}
	status, body := d.send(http.MethodGet, path, "", basic(operatorUser, operatorPassword))
	var info struct{ Title string }
	if err := json.Unmarshal(body, &info); err != nil || status != http.StatusOK {
		d.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return strings.NewReplacer("**", "", "*", "", "`", "").Replace(strings.TrimPrefix(info.Title, "[?] "))
}

// TestSessionHeadingIsTheTUIsTitle: a session's heading is the title the TUI
// lists it under — who asks and what about — not its raw id, which stays
// below it with the directory; the agent's inline markdown is rendered, in
// the heading as in the message, never shown as raw markers.
func TestSessionHeadingIsTheTUIsTitle(t *testing.T) {
	d := startDaemon(t)
	done := d.callTool("ses_titles", map[string]any{"question": "Release **v2.3** to `prod`?", "header": "Release",
		"options": []any{map[string]any{"label": "Yes", "description": "ship *it*"}, map[string]any{"label": "Later"}}})
	plainID := d.ask(`{"sessionID":"ses_plain","directory":"/srv/shop","message":"Deploy *now*?\nThe canary is green.",
		"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","title":"Go ahead"}}}}`)
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(plainID)))
	b.waitFor("both sessions have their titles", `document.querySelectorAll("section.session h2.titled").length === 2`)

	headings := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll("section.session h2")].map(h =>
		[h.querySelector(".where").textContent, h.querySelector(".title").textContent]))`)
	for _, s := range []struct{ session, directory, where, agent string }{
		{"ses_titles", "", "ses_titles", "e2e-ui-agent: "},
		{"ses_plain", "/srv/shop", "ses_plain in /srv/shop", ""},
	} {
		want := d.tuiTitle(s.session, s.directory)
		got, ok := headings[s.where]
		switch {
		case !ok:
			t.Errorf("no heading over %q: %q", s.where, headings)
		case got != want:
			t.Errorf("%s: heading %q, want the TUI's title %q", s.session, got, want)
		case !strings.HasPrefix(got, s.agent):
			t.Errorf("%s: heading %q does not name the asking agent %q", s.session, got, s.agent)
		case strings.Contains(got, s.session):
			t.Errorf("%s: heading %q is the raw id", s.session, got)
		}
	}
	rendered := eval[[]string](b, `[...document.querySelectorAll("section.session h2 .title :is(strong, em, code), .message :is(strong, em, code), .description :is(strong, em, code)")]
		.map(e => e.tagName + ":" + e.textContent)`)
	for _, want := range []string{"STRONG:v2.3", "CODE:prod", "EM:now", "EM:it"} {
		if !strings.Contains(strings.Join(rendered, " "), want) {
			t.Errorf("%s is not rendered: %q", want, rendered)
		}
	}
	if text := eval[string](b, `document.querySelector("main").innerText`); strings.ContainsAny(text, "*`") {
		t.Errorf("markdown markers show raw:\n%s", text)
	}
	b.screenshot("headings")
	b.do(chromedp.Click(`article.question:not(#question-` + plainID + `) button.dismiss`))
	if action, _ := toolAnswer(t, done); action == "" {
		t.Error("the tool call got no action")
	}
	// Under Just answered, and in the confirmation, the same rule holds.
	b.waitFor("the dismissed question is under Just answered", `document.querySelector("#recent .what") !== null`)
	if got := eval[[]string](b, `[...document.querySelectorAll("#recent .what :is(strong, code)")].map(e => e.tagName + ":" + e.textContent)`); !reflect.DeepEqual(got, []string{"STRONG:v2.3", "CODE:prod"}) {
		t.Errorf("under Just answered the question's marks are %q", got)
	}
	if text := eval[string](b, `document.getElementById("recent").innerText + document.getElementById("confirmation").innerText`); strings.ContainsAny(text, "*`") {
		t.Errorf("markdown markers show raw under Just answered or in the confirmation:\n%s", text)
	}
}

// TestInlineRuleIsTheGoRule: the page's inline.js splits agents' text into
// marks exactly as the Go rule other surfaces use (internal/ui/inline), so a
// title reads the same in the page and in a terminal.
func TestInlineRuleIsTheGoRule(t *testing.T) {
	d := startDaemon(t)
	b := openPage(t, d)
	texts := []string{"", "plain", "Release **v2.3** to `prod`?", "Deploy *now*?\nThe canary is green.", "**a**", "*a*b",
		"2 * 3 * 4", "** not bold **", "**two\nlines**", "`two\nlines`", "snake_case and __init__ stay", "***x***",
		"`a*b*c`", "**unclosed", "*é* ünï **日本**", "\u00a0*x\u00a0*", "*\tx*", "*x\v*", "<b>**hi**</b>", "a**b**c*d*e`f`g"}
	arg, _ := json.Marshal(texts)
	got := eval[[][]inline.Span](b, `import(new URL("ui/inline.js", location.origin + location.pathname).href)
		.then(m => `+string(arg)+`.map(t => m.spans(t)))`, chromedp.EvalAwaitPromise)
	for i, text := range texts {
		want := inline.Spans(text)
		if len(want) == 0 {
			want = []inline.Span{}
		}
		if i >= len(got) {
			t.Fatalf("the page split %d texts of %d", len(got), len(texts))
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("%q: the page splits it into %q, Go into %q", text, got[i], want)
		}
	}
}
