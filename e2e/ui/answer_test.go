package ui

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// releaseForm asks five questions, one of every shape the page renders.
const releaseForm = `{"sessionID":"ses_release","directory":"/srv/shop","message":"Release v2 of the shop?\nThe canary has been green for an hour.",
"requestedSchema":{"type":"object","properties":{
  "env":{"type":"string","title":"Environment","description":"Where to deploy","oneOf":[
    {"const":"stg","title":"Staging"},{"const":"prod","title":"Production"}],"default":"stg"},
  "checks":{"type":"array","title":"Checks to run","minItems":1,"maxItems":2,
    "items":{"type":"string","enum":["lint","test","bench"]},"default":["test"]},
  "notify":{"type":"boolean","title":"Tell the team","default":false},
  "contact":{"type":"string","title":"On-call email","format":"email","maxLength":60},
  "replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":9,"default":2}},
  "required":["env","contact"]}}`

// card is the CSS selector of question id's card; more narrows it.
func card(id string, more ...string) string {
	return strings.TrimSpace("#question-" + id + " " + strings.Join(more, " "))
}

// option is the input of an option of field index, by its label.
func option(id string, index int, label string) string {
	return card(id, `[data-index="`+itoa(index)+`"] input[value="`+label+`"]`)
}

func field(id string, index int) string {
	return card(id, `[data-index="`+itoa(index)+`"] input`)
}

func itoa(i int) string { return string(rune('0' + i)) }

func openPage(t *testing.T, d *daemon) *browser {
	t.Helper()
	b := newBrowser(t, operatorUser, operatorPassword)
	b.do(chromedp.Navigate(d.URL + "/"))
	b.waitFor("the page connects", `document.getElementById("status").textContent.startsWith("Connected")`)
	return b
}

// TestAnswerEveryShape answers a five-question form with the mouse: defaults
// are preselected, required fields marked, and the agent gets exactly the
// typed content.
func TestAnswerEveryShape(t *testing.T) {
	d := startDaemon(t)
	id := d.ask(releaseForm)
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(id)))

	if got := eval[string](b, `location.pathname`); got != "/ui" {
		t.Errorf("GET / led to %s, want /ui", got)
	}
	checked := eval[[]string](b, `[...document.querySelectorAll("#question-`+id+` input:checked")].map(i => i.value)`)
	if want := []string{"Staging", "test", "No"}; !reflect.DeepEqual(checked, want) {
		t.Errorf("preselected %q, want the defaults %q", checked, want)
	}
	if v := eval[string](b, `document.querySelector('`+field(id, 4)+`').value`); v != "2" {
		t.Errorf("replicas shows %q, want the default 2", v)
	}
	text := eval[string](b, `document.querySelector("#question-`+id+`").innerText`)
	for _, want := range []string{"Release v2 of the shop?\nThe canary has been green for an hour.", "Environment *", "Where to deploy",
		"prod", "Pick 1–2", "On-call email *", "An email address", "A whole number from 1 to 9"} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not show %q:\n%s", want, text)
		}
	}
	b.waitFor("the session's title", `document.querySelector("section.session h2.titled") !== null`)
	heading := eval[string](b, `document.querySelector("section.session h2").innerText`)
	if heading != "Release v2 of the shop?\nses_release in /srv/shop" {
		t.Errorf("group heading %q", heading)
	}
	if png := b.screenshot("every-shape"); os.Getenv("QUESTIOND_UI_SCREENSHOT") != "" {
		// The README's picture: QUESTIOND_UI_SCREENSHOT=$PWD/docs/ui.png.
		if err := os.WriteFile(os.Getenv("QUESTIOND_UI_SCREENSHOT"), png, 0o644); err != nil {
			t.Error(err)
		}
	}

	b.do(
		chromedp.Click(option(id, 0, "Production")),
		chromedp.Click(option(id, 1, "lint")),
		chromedp.Click(option(id, 2, "Yes")),
		chromedp.SendKeys(field(id, 3), "ops@example.com"),
		clearField(field(id, 4)),
		chromedp.SendKeys(field(id, 4), "5"),
		chromedp.Click(card(id, "button.submit")),
		chromedp.WaitNotPresent(card(id)),
	)
	got := d.result(id)
	want := result{Action: "accept", Content: map[string]any{
		"env": "prod", "checks": []any{"lint", "test"}, "notify": true, "contact": "ops@example.com", "replicas": float64(5)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the agent got %+v, want %+v", got, want)
	}
	b.waitFor("the page shows no question", `!document.getElementById("empty").hidden`)
}

// clearField empties a text input, as selecting all and deleting does.
func clearField(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector('` + sel + `').value = ""`)
}
