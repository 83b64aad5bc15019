package inline_test

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/ui"
	"github.com/questiond/questiond/internal/ui/inline"
)

// Cases are texts with the spans the rule splits them into; e2e/ui checks
// that the page's inline.js splits them alike.
var Cases = []struct {
	In   string
	Want []inline.Span
}{
	{"", nil},
	{"plain text", []inline.Span{{inline.Text, "plain text"}}},
	{"Release **v2.3** to `prod`?", []inline.Span{{inline.Text, "Release "}, {inline.Strong, "v2.3"}, {inline.Text, " to "}, {inline.Code, "prod"}, {inline.Text, "?"}}},
	{"Deploy *now*?\nThe canary is green.", []inline.Span{{inline.Text, "Deploy "}, {inline.Em, "now"}, {inline.Text, "?\nThe canary is green."}}},
	{"**a**", []inline.Span{{inline.Strong, "a"}}},
	{"*a*b", []inline.Span{{inline.Em, "a"}, {inline.Text, "b"}}},
	{"2 * 3 * 4", []inline.Span{{inline.Text, "2 * 3 * 4"}}},
	{"** not bold **", []inline.Span{{inline.Text, "** not bold **"}}},
	{"**two\nlines**", []inline.Span{{inline.Strong, "two\nlines"}}},
	{"`two\nlines`", []inline.Span{{inline.Text, "`two\nlines`"}}},
	{"snake_case and __init__ stay", []inline.Span{{inline.Text, "snake_case and __init__ stay"}}},
	{"***x***", []inline.Span{{inline.Text, "*"}, {inline.Strong, "x"}, {inline.Text, "*"}}},
	{"`a*b*c`", []inline.Span{{inline.Code, "a*b*c"}}},
	{"**unclosed", []inline.Span{{inline.Text, "**unclosed"}}},
	{"*é* ünï **日本**", []inline.Span{{inline.Em, "é"}, {inline.Text, " ünï "}, {inline.Strong, "日本"}}},
	{"\u00a0*x\u00a0*", []inline.Span{{inline.Text, "\u00a0"}, {inline.Em, "x\u00a0"}}},
	{"<b>**hi**</b>", []inline.Span{{inline.Text, "<b>"}, {inline.Strong, "hi"}, {inline.Text, "</b>"}}},
}

func TestSpans(t *testing.T) {
	for _, c := range Cases {
		if got := inline.Spans(c.In); !reflect.DeepEqual(got, c.Want) {
			t.Errorf("Spans(%q) = %q, want %q", c.In, got, c.Want)
		}
	}
}

func TestPlain(t *testing.T) {
	for in, want := range map[string]string{
		"Release **v2.3** to `prod`?": "Release v2.3 to prod?",
		"e2e-ui-agent: *Deploy* now":  "e2e-ui-agent: Deploy now",
		"2 * 3 * 4":                   "2 * 3 * 4",
	} {
		if got := inline.Plain(in); got != want {
			t.Errorf("Plain(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestThePageHasTheSamePattern: the page's inline.js holds Pattern itself,
// so a change of the rule on one side fails here until the other follows.
func TestThePageHasTheSamePattern(t *testing.T) {
	src, err := fs.ReadFile(ui.Files(), "inline.js")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "const marks = /"+inline.Pattern+"/g;") {
		t.Errorf("assets/inline.js does not hold the rule's pattern /%s/g", inline.Pattern)
	}
}
