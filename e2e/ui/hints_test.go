package ui

import (
	"reflect"
	"strings"
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

// TestRefusalsInAPersonsWords: what the server refuses (patterns the
// browser cannot read, lengths it counts otherwise) is said at the field in
// a person's words, never in the API's (answers[0] ("Ticket"): …); a
// pattern shows only through the property's examples, else as "the
// required format", never as a regular expression.
func TestRefusalsInAPersonsWords(t *testing.T) {
	d := startDaemon(t)
	id := d.ask(`{"message":"File it","requestedSchema":{"type":"object","properties":{
		"ticket":{"type":"string","title":"Ticket","pattern":"(?i)^ticket-[0-9]+$","examples":["TICKET-42"]},
		"code":{"type":"string","title":"Code","pattern":"(?i)^[a-z]+$"},
		"name":{"type":"string","title":"Name","minLength":3}},"required":["ticket","code","name"]}}`)
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(id)))
	if got, want := hints(b, id), []string{"Like TICKET-42", "In the required format", "At least 3 characters"}; !reflect.DeepEqual(got, want) {
		t.Errorf("hints %q, want %q", got, want)
	}
	fieldError := func(i int) string {
		return eval[string](b, `document.querySelector('`+card(id, `[data-index="`+itoa(i)+`"] .field-error`)+`').textContent`)
	}
	// Each answer is refused in turn, and fixed.
	b.do(
		chromedp.SendKeys(field(id, 0), "nope"),
		chromedp.SendKeys(field(id, 1), "abc-1"),
		chromedp.SendKeys(field(id, 2), "😀😀"), // 4 UTF-16 units for the browser, 2 characters for the server
	)
	for _, step := range []struct {
		index   int
		refusal string
		fix     string
	}{
		{0, "Type it like TICKET-42.", "ticket-7"},
		{1, "Type it in the required format.", "abc"},
		{2, "Type at least 3 characters.", "Ana"},
	} {
		b.do(chromedp.Click(card(id, "button.submit")))
		b.waitFor("the refusal of field "+itoa(step.index), `document.querySelector('`+card(id, `[data-index="`+itoa(step.index)+`"] .field-error`)+`').textContent !== ""`)
		if got := fieldError(step.index); got != step.refusal {
			t.Errorf("field %d refused with %q, want %q", step.index, got, step.refusal)
		}
		text := eval[string](b, `document.querySelector('`+card(id)+`').innerText`)
		for _, raw := range []string{"answers[", "(?i)", "^", "pattern"} {
			if strings.Contains(text, raw) {
				t.Errorf("the card shows %q:\n%s", raw, text)
			}
		}
		b.clear(field(id, step.index))
		b.do(chromedp.SendKeys(field(id, step.index), step.fix))
	}
	b.do(chromedp.Click(card(id, "button.submit")), chromedp.WaitNotPresent(card(id)))
	want := result{Action: "accept", Content: map[string]any{"ticket": "ticket-7", "code": "abc", "name": "Ana"}}
	if got := d.result(id); !reflect.DeepEqual(got, want) {
		t.Errorf("the agent got %+v, want %+v", got, want)
	}
}
