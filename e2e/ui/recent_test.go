package ui

import (
	"net/http"
	"reflect"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
)

// timeLeft is what question id's card says of its time left, and whether it
// is marked urgent.
func timeLeft(b *browser, id string) (string, bool) {
	b.t.Helper()
	got := eval[[]any](b, `(p => p ? [p.textContent, p.classList.contains("urgent")] : ["", false])(document.querySelector('`+card(id, ".time-left")+`'))`)
	return got[0].(string), got[1].(bool)
}

// TestTimeLeftByTheDaemonsClock: each question says how long it has before
// it ends unanswered, counting down by the daemon's clock even when the
// operator's is two hours off; under a minute it is marked urgent, and one
// that times out stays under "Just answered" as timed out.
func TestTimeLeftByTheDaemonsClock(t *testing.T) {
	d := startDaemon(t)
	withTimeout := func(message, timeout string) string {
		return d.ask(`{"sessionID":"ses_time","message":"` + message + `","timeout":` + timeout + `,
			"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","title":"OK"}}}}`)
	}
	minutes, hours, seconds := withTimeout("Ninety seconds", "90"), withTimeout("Three hours", `"3h"`), withTimeout("Thirty seconds", "30")
	b := newBrowser(t, operatorUser, operatorPassword)
	b.beforePageScripts(`{ const now = Date.now; Date.now = () => now.call(Date) + 2 * 3600e3; }`)
	b.do(chromedp.Navigate(d.URL + "/ui"))
	for _, id := range []string{minutes, hours, seconds} {
		b.do(chromedp.WaitVisible(card(id, ".time-left")))
	}
	for _, c := range []struct {
		id     string
		want   *regexp.Regexp
		urgent bool
	}{
		{minutes, regexp.MustCompile(`^1 min (2[0-9]|30) s left$`), false},
		{hours, regexp.MustCompile(`^(2 h 59|3 h 0) min left$`), false},
		{seconds, regexp.MustCompile(`^([12][0-9]|30) s left$`), true},
	} {
		if text, urgent := timeLeft(b, c.id); !c.want.MatchString(text) || urgent != c.urgent {
			t.Errorf("question %s says %q (urgent %v), want %v (urgent %v)", c.id, text, urgent, c.want, c.urgent)
		}
	}
	first, _ := timeLeft(b, seconds)
	b.waitFor("the time left counts down", `document.querySelector('`+card(seconds, ".time-left")+`').textContent !== "`+first+`"`)
	b.screenshot("time-left")

	short := withTimeout("Three seconds", "3")
	b.do(chromedp.WaitVisible(card(short)), chromedp.WaitNotPresent(card(short)))
	b.waitFor("the timed-out question is under Just answered", `document.getElementById("done-`+short+`") !== null`)
	if got := eval[string](b, `document.querySelector("#done-`+short+` summary .outcome").textContent`); got != "Timed out" {
		t.Errorf("the timed-out question shows as %q", got)
	}
	if got := d.result(short); got.Action != "cancel" {
		t.Errorf("the timed-out question's agent got %+v, want cancel", got)
	}
}

// done is what "Just answered" shows: each entry's outcome and question,
// newest first, and how many are open.
func done(b *browser) (entries []string, open int) {
	b.t.Helper()
	entries = eval[[]string](b, `[...document.querySelectorAll("#recent details.done")].map(d =>
		d.querySelector(".outcome").textContent + ": " + d.querySelector(".what").textContent)`)
	return entries, eval[int](b, `document.querySelectorAll("#recent details.done[open]").length`)
}

// TestAnsweredStayCollapsedWithWhatTheAgentGot: after an answer the page
// confirms it, and the question stays under "Just answered", collapsed, with
// what the agent received (a default the answer left to it included); the
// page's dismissals and declines, answers given elsewhere and questions
// withdrawn join it, newest first, the last five only.
func TestAnsweredStayCollapsedWithWhatTheAgentGot(t *testing.T) {
	d := startDaemon(t)
	release := d.ask(releaseForm)
	b := openPage(t, d)
	b.do(
		chromedp.WaitVisible(card(release)),
		chromedp.Click(option(release, 0, "Production")),
		chromedp.SendKeys(field(release, 3), "ops@example.com"),
		clearField(field(release, 4)),
		chromedp.Click(card(release, "button.submit")),
		chromedp.WaitNotPresent(card(release)),
	)
	d.expectAccepted(t, release, map[string]any{"env": "prod", "checks": []any{"test"}, "notify": false, "contact": "ops@example.com", "replicas": float64(2)})
	if got, want := eval[string](b, `document.getElementById("confirmation").textContent`), "Answered “Release v2 of the shop?”: the agent has your answers."; got != want {
		t.Errorf("confirmation %q, want %q", got, want)
	}
	if entries, open := done(b); !reflect.DeepEqual(entries, []string{"Answered: Release v2 of the shop?"}) || open != 0 {
		t.Errorf("Just answered shows %q with %d open, want the answered question collapsed", entries, open)
	}
	b.do(chromedp.Click(`#done-` + release + ` summary`))
	got := eval[[]string](b, `[...document.querySelectorAll("#done-`+release+` .received :is(dt, dd)")].map(e => e.textContent)`)
	want := []string{"Environment", "Production (prod)", "Checks to run", "test", "Tell the team", "No",
		"On-call email", "ops@example.com", "Replicas", "2 (default)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the answered question shows %q, want what the agent received %q", got, want)
	}
	b.screenshot("just-answered")

	dismissed, declined, elsewhere, withdrawn, last := ask(d, "First"), ask(d, "Second"), ask(d, "Third"), ask(d, "Fourth"), ask(d, "Fifth")
	for _, id := range []string{dismissed, declined, elsewhere, withdrawn, last} {
		b.do(chromedp.WaitVisible(card(id)))
	}
	b.do(chromedp.Click(card(dismissed, "button.dismiss")), chromedp.WaitNotPresent(card(dismissed)))
	if got := eval[string](b, `document.getElementById("confirmation").textContent`); got != "Dismissed “First”: the agent heard cancel." {
		t.Errorf("confirmation %q after Dismiss", got)
	}
	b.do(chromedp.Click(card(declined, "button.decline")), chromedp.WaitNotPresent(card(declined)))
	if got := eval[string](b, `document.getElementById("confirmation").textContent`); got != "Declined “Second”: the agent heard decline." {
		t.Errorf("confirmation %q after Decline", got)
	}
	if status, body := d.send(http.MethodPost, "/question/"+elsewhere+"/reply", `{"answers":[["blue"],["from curl"]]}`, basic(operatorUser, operatorPassword)); status != http.StatusOK {
		t.Fatalf("reply through the API: %d %s", status, body)
	}
	b.do(chromedp.WaitNotPresent(card(elsewhere)))
	d.send(http.MethodDelete, "/elicitations/"+withdrawn, "", "")
	b.do(chromedp.WaitNotPresent(card(withdrawn)))
	if got := eval[string](b, `document.getElementById("confirmation").textContent`); got != "Declined “Second”: the agent heard decline." {
		t.Errorf("confirmation %q: endings elsewhere are not the operator's to confirm", got)
	}
	b.do(chromedp.Click(`#done-` + elsewhere + ` summary`))
	if got := eval[[]string](b, `[...document.querySelectorAll("#done-`+elsewhere+` .received dd")].map(e => e.textContent)`); !reflect.DeepEqual(got, []string{"blue", "from curl"}) {
		t.Errorf("the question answered elsewhere shows %q", got)
	}
	b.do(chromedp.Click(`#done-` + elsewhere + ` summary`))
	b.do(chromedp.Click(card(last, "button.dismiss")), chromedp.WaitNotPresent(card(last)))
	entries, open := done(b)
	wantEntries := []string{"Dismissed: Fifth", "Ended elsewhere: Fourth", "Answered elsewhere: Third", "Declined: Second", "Dismissed: First"}
	if !reflect.DeepEqual(entries, wantEntries) || open != 0 {
		t.Errorf("Just answered shows %q with %d open, want the last five collapsed %q", entries, open, wantEntries)
	}
	b.do(chromedp.Click(`#done-`+elsewhere+` summary`), chromedp.EmulateViewport(320, 640))
	b.waitFor("the layout settles at 320 px", `window.innerWidth === 320`)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 320 {
		t.Errorf("at 320 px the page with Just answered open is %d px wide: it scrolls sideways", w)
	}
	b.screenshot("just-answered-320px")
}
