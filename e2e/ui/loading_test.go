package ui

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// saysNothingWaiting is true while the page tells the operator that no
// question is waiting.
const saysNothingWaiting = `[...document.querySelectorAll("main *")].some(e =>
	e.checkVisibility() && e.textContent.includes("No question is waiting"))`

// TestOpenedWithCredentialsInTheURL: http://opencode:<pw>@host/ is how a
// headless setup or a password manager opens the page. The browser refuses
// to fetch a URL carrying credentials, and relative URLs inherit them from
// the page's; the page must resolve its requests against its origin and
// work. The browser here answers no password prompt: the address's
// credentials are all it has.
func TestOpenedWithCredentialsInTheURL(t *testing.T) {
	d := startDaemon(t)
	for _, entry := range []string{"/", "/ui"} {
		t.Run(entry, func(t *testing.T) {
			id := ask(d, "Opened at "+entry+" with a password in the address")
			b := newBrowser(t, operatorUser, "")
			u, err := url.Parse(d.URL + entry)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword(operatorUser, operatorPassword)
			b.do(chromedp.Navigate(u.String()))
			b.waitFor("the question shows", `document.getElementById("question-`+id+`") !== null || /Could not/.test(document.body.innerText)`)
			if text := eval[string](b, `document.body.innerText`); strings.Contains(text, "Could not") {
				b.screenshot("credentials")
				t.Fatalf("opened with credentials in the URL the page says:\n%s", text)
			}
			b.waitFor("the event stream connects", `document.getElementById("status").textContent.startsWith("Connected")`)
			if path := eval[string](b, `location.pathname`); path != "/ui" {
				t.Errorf("the page is at %s", path)
			}
			b.do(
				chromedp.Click(option(id, 0, "red")),
				chromedp.SendKeys(field(id, 1), "typed at a URL with credentials"),
				chromedp.Click(card(id, "button.submit")),
				chromedp.WaitNotPresent(card(id)),
			)
			want := result{Action: "accept", Content: map[string]any{"color": "red", "note": "typed at a URL with credentials"}}
			if got := d.result(id); !reflect.DeepEqual(got, want) {
				t.Errorf("the agent got %+v, want %+v", got, want)
			}
			b.waitFor("the page says nothing is waiting", saysNothingWaiting)
		})
	}
}

// TestQuestionThatCannotLoadIsAFailure: a question whose form cannot be
// fetched is shown as a failure to load, with a way to try again, never as
// "No question is waiting".
func TestQuestionThatCannotLoadIsAFailure(t *testing.T) {
	d := startDaemon(t)
	id := ask(d, "Its form cannot be fetched")
	b := newBrowser(t, operatorUser, operatorPassword)
	heal := b.failing("/questiond/question/" + id + "/form")
	b.do(chromedp.Navigate(d.URL + "/ui"))
	b.waitFor("the failure shows in the list", `document.querySelector("main").innerText.includes("Could not load question `+id+`")`)
	b.screenshot("cannot-load")
	if eval[bool](b, saysNothingWaiting) {
		t.Errorf("a question failed to load and the page says none is waiting:\n%s", eval[string](b, `document.querySelector("main").innerText`))
	}
	if title := eval[string](b, `document.title`); title != "(1) questiond" {
		t.Errorf("title %q, want the waiting question counted", title)
	}
	heal()
	b.do(
		chromedp.Click(`#failed-`+id+` button`),
		chromedp.WaitVisible(card(id)),
	)
	if eval[bool](b, `document.querySelector("main").innerText.includes("Could not load")`) {
		t.Error("the failure stays after the question loaded")
	}
	b.do(chromedp.Click(card(id, "button.dismiss")), chromedp.WaitNotPresent(card(id)))
	if got := d.result(id); got.Action != "cancel" {
		t.Errorf("the agent got %+v, want cancel", got)
	}
	b.waitFor("the page says nothing is waiting", saysNothingWaiting)
}

// TestLoadingUntilTheListIsKnown: while the pending questions are not yet
// known (a slow network here) the page says "Loading…", never "No question
// is waiting", not even for a frame; once they are, it shows them.
func TestLoadingUntilTheListIsKnown(t *testing.T) {
	d := startDaemon(t)
	id := ask(d, "Waiting behind a slow network")
	b := newBrowser(t, operatorUser, operatorPassword)
	b.slow("/question", 700*time.Millisecond) // the list and the form
	b.beforePageScripts(`
		window.said = { nothing: false, loading: false };
		new MutationObserver(() => {
			if (` + saysNothingWaiting + `) said.nothing = true;
			if (document.body?.innerText.includes("Loading…")) said.loading = true;
		}).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });`)
	b.do(chromedp.Navigate(d.URL+"/ui"), chromedp.WaitVisible(card(id)))
	if eval[bool](b, `said.nothing`) {
		t.Error(`before the question showed, the page said "No question is waiting"`)
	}
	if !eval[bool](b, `said.loading`) {
		t.Error(`before the question showed, the page did not say "Loading…"`)
	}
	if eval[bool](b, `document.body.innerText.includes("Loading…")`) {
		t.Error(`"Loading…" stays after the question showed`)
	}
	b.do(chromedp.Click(card(id, "button.dismiss")), chromedp.WaitNotPresent(card(id)))
	b.waitFor("the page says nothing is waiting", saysNothingWaiting)
	if !eval[bool](b, `said.nothing`) {
		t.Error("the watch missed the page saying nothing is waiting")
	}
}

// TestPendingListThatCannotBeReadIsAFailure: when the list of pending
// questions cannot be read the page says so, with a way to try again; it
// neither claims that nothing is waiting nor stays on "Loading…".
func TestPendingListThatCannotBeReadIsAFailure(t *testing.T) {
	d := startDaemon(t)
	b := newBrowser(t, operatorUser, operatorPassword)
	heal := b.failing("=" + d.URL + "/question")
	b.do(chromedp.Navigate(d.URL + "/ui"))
	b.waitFor("the failure shows", `document.querySelector("main").innerText.includes("Could not list the pending questions")`)
	if eval[bool](b, saysNothingWaiting) || eval[bool](b, `document.getElementById("loading").checkVisibility()`) {
		t.Errorf("the list could not be read and the page says:\n%s", eval[string](b, `document.querySelector("main").innerText`))
	}
	heal()
	b.do(chromedp.Click(`#failed-list button`))
	b.waitFor("the page says nothing is waiting", saysNothingWaiting)
	if eval[bool](b, `document.querySelector("main").innerText.includes("Could not")`) {
		t.Error("the failure stays after the list was read")
	}
}
