package ui

import (
	"reflect"
	"testing"

	"github.com/chromedp/chromedp"
)

// hints are the hints the card of question id shows, field by field.
func hints(b *browser, id string) []string {
	return eval[[]string](b, `[...document.querySelectorAll('`+card(id, "[data-index]")+`')].map(n => n.querySelector(".hint")?.textContent ?? "")`)
}

// TestRequiredMultiSelectSaysPickAtLeastOne: a required multi-select refuses
// an empty pick, so its hint must not offer "any number"; the page stops an
// empty answer with the same words before sending it.
func TestRequiredMultiSelectSaysPickAtLeastOne(t *testing.T) {
	d := startDaemon(t)
	id := d.ask(`{"message":"Which checks?","requestedSchema":{"type":"object","properties":{
		"checks":{"type":"array","title":"Checks","items":{"type":"string","enum":["lint","test"]}},
		"more":{"type":"array","title":"More","maxItems":2,"items":{"type":"string","enum":["a","b","c"]}},
		"optional":{"type":"array","title":"Optional","items":{"type":"string","enum":["x","y"]}}},
		"required":["checks","more"]}}`)
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(id)))
	if got, want := hints(b, id), []string{"Pick at least one", "Pick 1–2", "Pick any number"}; !reflect.DeepEqual(got, want) {
		t.Errorf("hints %q, want %q", got, want)
	}
	b.do(chromedp.Click(card(id, "button.submit")))
	if got := eval[string](b, `document.querySelector('`+field(id, 0)+`').validationMessage`); got != "Pick at least one." {
		t.Errorf("an empty required multi-select is stopped with %q", got)
	}
	if !d.pending(id) {
		t.Fatal("an empty answer to a required multi-select was sent")
	}
	b.do(
		chromedp.Click(option(id, 0, "lint")),
		chromedp.Click(option(id, 1, "b")),
		chromedp.Click(card(id, "button.submit")),
		chromedp.WaitNotPresent(card(id)),
	)
	want := result{Action: "accept", Content: map[string]any{"checks": []any{"lint"}, "more": []any{"b"}}}
	if got := d.result(id); !reflect.DeepEqual(got, want) {
		t.Errorf("the agent got %+v, want %+v", got, want)
	}
}
