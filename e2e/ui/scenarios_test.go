package ui

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/questiond/questiond/internal/testenv"
)

// TestServerRefusalShownInlineAndFixed: a pattern the browser cannot read
// (RE2's (?i)) lets a wrong answer through to the server, whose 400 appears,
// reworded, next to the field it names; what was typed stays, and the fix
// goes through.
func TestServerRefusalShownInlineAndFixed(t *testing.T) {
	d := startDaemon(t)
	id := d.ask(`{"message":"Which ticket?","requestedSchema":{"type":"object","properties":{
		"ticket":{"type":"string","title":"Ticket","pattern":"(?i)^ticket-\\d+$"},
		"note":{"type":"string","title":"Note"}},"required":["ticket"]}}`)
	b := openPage(t, d)
	b.do(
		chromedp.WaitVisible(card(id)),
		chromedp.SendKeys(field(id, 0), "nope"),
		chromedp.SendKeys(field(id, 1), "keep me"),
		chromedp.Click(card(id, "button.submit")),
	)
	b.waitFor("the refusal shows at the field", `document.querySelector('`+card(id, `[data-index="0"] .field-error`)+`').textContent !== ""`)
	message := eval[string](b, `document.querySelector('`+card(id, `[data-index="0"] .field-error`)+`').textContent`)
	if message != "Type it in the required format." {
		t.Errorf("field error %q, want the server's refusal of answers[0] in a person's words", message)
	}
	if got := eval[string](b, `document.querySelector('`+card(id, `[data-index="0"]`)+`').getAttribute("aria-invalid")`); got != "true" {
		t.Errorf("the refused field is not marked invalid (%q)", got)
	}
	typed := eval[[]string](b, `[...document.querySelectorAll('`+card(id, "input")+`')].map(i => i.value)`)
	if !reflect.DeepEqual(typed, []string{"nope", "keep me"}) {
		t.Errorf("after the refusal the fields hold %q, want what was typed", typed)
	}
	if !d.pending(id) {
		t.Fatal("the refused answer ended the question")
	}
	b.screenshot("refused")
	b.clear(field(id, 0))
	b.do(
		chromedp.SendKeys(field(id, 0), "TICKET-42"),
		chromedp.Click(card(id, "button.submit")),
		chromedp.WaitNotPresent(card(id)),
	)
	d.expectAccepted(t, id, map[string]any{"ticket": "TICKET-42", "note": "keep me"})
}

const shortForm = `{"sessionID":"ses_short","message":"%s","requestedSchema":{"type":"object","properties":{
	"color":{"type":"string","title":"Color","enum":["red","blue"]},
	"note":{"type":"string","title":"Note"}},"required":["color","note"]}}`

func ask(d *daemon, message string) string {
	return d.ask(strings.Replace(shortForm, "%s", message, 1))
}

// answerShortForm answers question id, a shortForm, in the page with color
// and note, and waits for its card to go.
func answerShortForm(b *browser, id, color, note string) {
	b.do(
		chromedp.WaitVisible(card(id)),
		chromedp.Click(option(id, 0, color)),
		chromedp.SendKeys(field(id, 1), note),
		chromedp.Click(card(id, "button.submit")),
		chromedp.WaitNotPresent(card(id)),
	)
}

// expectAccepted fails the test unless the agent of question id got accept
// with content.
func (d *daemon) expectAccepted(t *testing.T, id string, content map[string]any) {
	t.Helper()
	want := result{Action: "accept", Content: content}
	if got := d.result(id); !reflect.DeepEqual(got, want) {
		t.Errorf("the agent got %+v, want %+v", got, want)
	}
}

// TestDismissAndDecline: Dismiss tells the agent cancel (not now), Decline
// tells it decline (no); both questions leave the page.
func TestDismissAndDecline(t *testing.T) {
	d := startDaemon(t)
	dismissed, declined := ask(d, "First"), ask(d, "Second")
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(dismissed)), chromedp.WaitVisible(card(declined)))
	order := eval[[]string](b, `[...document.querySelectorAll("article.question .message")].map(m => m.textContent)`)
	if !reflect.DeepEqual(order, []string{"First", "Second"}) {
		t.Errorf("questions shown as %q, want oldest first", order)
	}
	b.do(chromedp.Click(card(dismissed, "button.dismiss")), chromedp.WaitNotPresent(card(dismissed)))
	b.do(chromedp.Click(card(declined, "button.decline")), chromedp.WaitNotPresent(card(declined)))
	if got := d.result(dismissed); got.Action != "cancel" || got.Content != nil {
		t.Errorf("dismissed: the agent got %+v, want cancel", got)
	}
	if got := d.result(declined); got.Action != "decline" || got.Content != nil {
		t.Errorf("declined: the agent got %+v, want decline", got)
	}
}

// TestQuestionVanishesWhenAnsweredElsewhere: another client answers through
// the API and the page drops the question at once; one asked later appears.
func TestQuestionVanishesWhenAnsweredElsewhere(t *testing.T) {
	d := startDaemon(t)
	first := ask(d, "Answered elsewhere")
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(first)))
	later := ask(d, "Asked while the page is open")
	b.do(chromedp.WaitVisible(card(later)))
	status, body := d.send(http.MethodPost, "/question/"+first+"/reply", `{"answers":[["red"],["from curl"]]}`, basic(operatorUser, operatorPassword))
	if status != http.StatusOK {
		t.Fatalf("reply through the API: %d %s", status, body)
	}
	b.do(chromedp.WaitNotPresent(card(first)))
	if n := eval[int](b, `document.querySelectorAll("article.question").length`); n != 1 {
		t.Errorf("%d questions shown, want the later one only", n)
	}
	d.send(http.MethodDelete, "/elicitations/"+later, "", "") // the agent withdraws
	b.do(chromedp.WaitNotPresent(card(later)))
	if title := eval[string](b, `document.title`); title != "questiond" {
		t.Errorf("title %q with no question waiting", title)
	}
}

// TestKeyboardOnly answers with Tab, arrows, typing and Enter alone; the
// focus then moves on to the next question.
func TestKeyboardOnly(t *testing.T) {
	d := startDaemon(t)
	id, next := ask(d, "Keys only"), ask(d, "Next")
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(id)), chromedp.WaitVisible(card(next)))
	for range 6 {
		if eval[bool](b, `document.activeElement.matches('`+field(id, 0)+`')`) {
			break
		}
		b.do(chromedp.KeyEvent(kb.Tab))
	}
	if !eval[bool](b, `document.activeElement.matches('`+field(id, 0)+`')`) {
		t.Fatalf("Tab does not reach the first option; focus is on %s", eval[string](b, `document.activeElement.outerHTML`))
	}
	b.do(
		chromedp.KeyEvent(kb.ArrowDown), // the second option: blue
		chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent("via keys"),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitNotPresent(card(id)),
	)
	d.expectAccepted(t, id, map[string]any{"color": "blue", "note": "via keys"})
	if !eval[bool](b, `document.activeElement.matches('`+field(next, 0)+`')`) {
		t.Errorf("after the answer the focus is on %s, want the next question", eval[string](b, `document.activeElement.outerHTML`))
	}
}

// TestHostileSchemaRunsNoScript: markup and script in every text an agent
// controls shows as text and runs nothing.
func TestHostileSchemaRunsNoScript(t *testing.T) {
	d := startDaemon(t)
	const img = `<img src=x onerror=\"window.pwned=1\">`
	id := d.ask(`{"sessionID":"ses_hostile","directory":"/tmp/<b>bold</b><script>window.pwned=2</script>",
		"message":"<script>window.pwned=3</script>` + img + `","requestedSchema":{"type":"object","properties":{
		"pick":{"type":"string","title":"` + img + `","description":"<iframe src=javascript:window.pwned=4>",
			"oneOf":[{"const":"<svg onload=window.pwned=5>","title":"<b onmouseover=window.pwned=6>hover</b>"},{"const":"ok","title":"ok"}]},
		"free":{"type":"string","title":"<a href=javascript:window.pwned=7>link</a>","default":"\"><img src=x onerror=window.pwned=8>"}}}}`)
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(id)))
	b.do(chromedp.Click(card(id, `[data-index="0"] .choice label`))) // hover and click the hostile option
	b.screenshot("hostile")
	if n := eval[int](b, `document.querySelectorAll("main img, main script, main iframe, main svg, main b, main a").length`); n != 0 {
		t.Errorf("%d elements from the agent's markup in the page", n)
	}
	if pwned := eval[bool](b, `window.pwned !== undefined`); pwned {
		t.Errorf("the agent's script ran: window.pwned = %v", eval[any](b, `window.pwned`))
	}
	text := eval[string](b, `document.querySelector("main").innerText`)
	for _, want := range []string{"<script>window.pwned=3</script>", `<img src=x onerror="window.pwned=1">`,
		"<b onmouseover=window.pwned=6>hover</b>", "<iframe src=javascript:window.pwned=4>", "/tmp/<b>bold</b><script>window.pwned=2</script>"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q as text:\n%s", want, text)
		}
	}
	if v := eval[string](b, `document.querySelector('`+field(id, 1)+`').value`); v != `"><img src=x onerror=window.pwned=8>` {
		t.Errorf("the default shows as %q", v)
	}
	// What the agent received, under Just answered, is text too.
	b.do(chromedp.Click(card(id, "button.submit")), chromedp.WaitNotPresent(card(id)), chromedp.Click(`#done-`+id+` summary`))
	if n := eval[int](b, `document.querySelectorAll("#recent :is(img, script, iframe, svg, b, a)").length`); n != 0 {
		t.Errorf("%d elements from the agent's markup under Just answered", n)
	}
	if pwned := eval[bool](b, `window.pwned !== undefined`); pwned {
		t.Errorf("the agent's script ran under Just answered: window.pwned = %v", eval[any](b, `window.pwned`))
	}
	received := eval[string](b, `document.querySelector("#done-`+id+` .received").innerText`)
	for _, want := range []string{"<b onmouseover=window.pwned=6>hover</b> (<svg onload=window.pwned=5>)", `"><img src=x onerror=window.pwned=8>`} {
		if !strings.Contains(received, want) {
			t.Errorf("Just answered does not show %q as text:\n%s", want, received)
		}
	}
}

// TestReadableFromPhoneTo4K: nothing scrolls sideways at 320 px, the text
// grows on a 4K screen, and the dark scheme is dark.
func TestReadableFromPhoneTo4K(t *testing.T) {
	d := startDaemon(t)
	id := d.ask(releaseForm)
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(id)))

	b.do(chromedp.EmulateViewport(320, 640))
	b.waitFor("the layout settles at 320 px", `window.innerWidth === 320`)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 320 {
		t.Errorf("at 320 px the page is %d px wide: it scrolls sideways", w)
	}
	b.screenshot("320px")

	b.do(chromedp.EmulateViewport(3840, 2160))
	b.waitFor("the layout settles at 4K", `window.innerWidth === 3840`)
	if size := eval[float64](b, `parseFloat(getComputedStyle(document.body).fontSize)`); size < 24 {
		t.Errorf("at 3840 px the text is %v px", size)
	}
	b.screenshot("4k")

	b.do(chromedp.EmulateViewport(1000, 900))
	light := eval[string](b, `getComputedStyle(document.body).backgroundColor`)
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	dark := eval[string](b, `getComputedStyle(document.body).backgroundColor`)
	if light != "rgb(247, 247, 245)" || dark != "rgb(21, 23, 26)" {
		t.Errorf("background light %s, dark %s", light, dark)
	}
	b.screenshot("dark")
}

// TestNotificationNamesSessionAndFocuses: with permission granted and the tab
// hidden, a new question raises a notification naming its session and first
// question; clicking it focuses the question. The browser's Notification and
// document.hidden are stood in for, since a headless tab is never hidden.
func TestNotificationNamesSessionAndFocuses(t *testing.T) {
	d := startDaemon(t)
	b := openPage(t, d)
	eval[chromedp.Void](b, `
		window.notes = [];
		window.Notification = class {
			static permission = "granted";
			constructor(title, options) { this.title = title; this.body = options.body; this.on = {}; notes.push(this); }
			addEventListener(type, fn) { this.on[type] = fn; }
			close() { this.closed = true; }
		};
		Object.defineProperty(document, "hidden", { get: () => true, configurable: true });`)
	id := ask(d, "Deploy now?")
	b.do(chromedp.WaitVisible(card(id)))
	b.waitFor("a notification", `notes.length === 1`)
	title, body := eval[string](b, `notes[0].title`), eval[string](b, `notes[0].body`)
	if !strings.Contains(title, "ses_short") || !strings.Contains(body, "Deploy now?") {
		t.Errorf("notification %q / %q: want the session and the first question", title, body)
	}
	eval[chromedp.Void](b, `document.activeElement.blur(); notes[0].on.click()`)
	if !eval[bool](b, `document.querySelector('`+card(id)+`').contains(document.activeElement) && notes[0].closed`) {
		t.Error("clicking the notification does not focus its question")
	}
	marked := d.ask(`{"sessionID":"ses_marked","message":"Ship **v2.3**?","requestedSchema":{"type":"object","properties":{
		"ok":{"type":"boolean","title":"Ship *now*"}}}}`)
	b.do(chromedp.WaitVisible(card(marked)))
	b.waitFor("a second notification", `notes.length === 2`)
	if body := eval[string](b, `notes[1].body`); body != "Ship v2.3?\nShip now" {
		t.Errorf("notification body %q, want the message and first question without markdown markers", body)
	}
}

// TestAnswerAtIPv6Loopback: at http://[::1]:port the page's writes carry an
// Origin that is not on OpenCode's allowlist; they are its own origin's and
// must pass the cross-origin guard.
func TestAnswerAtIPv6Loopback(t *testing.T) {
	needChromium(t)
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		testenv.Missing(t, "an IPv6 loopback address", "enable IPv6 on lo ("+err.Error()+")")
	} else {
		l.Close()
	}
	d := startDaemonAt(t, "[::1]:0")
	if !strings.HasPrefix(d.URL, "http://[::1]:") {
		t.Fatalf("listening at %s", d.URL)
	}
	id := ask(d, "Over IPv6")
	b := openPage(t, d)
	answerShortForm(b, id, "red", "from [::1]")
	d.expectAccepted(t, id, map[string]any{"color": "red", "note": "from [::1]"})
}

// TestGroupedBySessionOldestFirst: questions are grouped by session and
// directory, sessions in the order of their oldest question, questions oldest
// first within their session, however their forms arrive.
func TestGroupedBySessionOldestFirst(t *testing.T) {
	d := startDaemon(t)
	askIn := func(session, dir, message string) string {
		body := strings.Replace(shortForm, `"ses_short"`, `"`+session+`","directory":"`+dir+`"`, 1)
		return d.ask(strings.Replace(body, "%s", message, 1))
	}
	ids := []string{askIn("ses_b", "/b", "b1"), askIn("ses_a", "/a", "a1"), askIn("ses_b", "/b", "b2"), askIn("ses_b", "/other", "b3")}
	b := openPage(t, d)
	for _, id := range ids {
		b.do(chromedp.WaitVisible(card(id)))
	}
	groups := eval[[]string](b, `[...document.querySelectorAll("section.session")].map(s =>
		s.querySelector("h2 .where").textContent + ": " + [...s.querySelectorAll(".message")].map(m => m.textContent).join(","))`)
	want := []string{"ses_b in /b: b1,b2", "ses_a in /a: a1", "ses_b in /other: b3"}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("groups %q, want %q", groups, want)
	}
	d.send(http.MethodDelete, "/elicitations/"+ids[0], "", "")
	b.do(chromedp.WaitNotPresent(card(ids[0])))
	first := eval[string](b, `document.querySelector("section.session h2 .where").textContent`)
	if first != "ses_a in /a" {
		t.Errorf("after b1 ended the first session is %q, want ses_a (its question is now the oldest)", first)
	}
}

// TestBehindAPathPrefix: a proxy serves questiond under /base/; the page's
// links, requests and event stream are relative, so it works there too.
func TestBehindAPathPrefix(t *testing.T) {
	d := startDaemon(t)
	target, _ := url.Parse(d.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.StripPrefix("/base", proxy))
	t.Cleanup(front.Close)
	id := ask(d, "Through a proxy")
	b := newBrowser(t, operatorUser, operatorPassword)
	b.do(chromedp.Navigate(front.URL + "/base/"))
	b.waitFor("the page connects", `document.getElementById("status").textContent.startsWith("Connected")`)
	if path := eval[string](b, `location.pathname`); path != "/base/ui" {
		t.Errorf("the page is at %s, want /base/ui", path)
	}
	answerShortForm(b, id, "blue", "proxied")
	d.expectAccepted(t, id, map[string]any{"color": "blue", "note": "proxied"})
}
