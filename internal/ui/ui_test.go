package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/ui"
)

func get(t *testing.T, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	ui.Handler(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result()
}

// TestEveryAnswerCarriesThePolicy: the page, its files and a miss all get the
// strict policy, so no answer of /ui can run a script that is not one of its
// own files.
func TestEveryAnswerCarriesThePolicy(t *testing.T) {
	for path, want := range map[string]struct {
		status int
		ctype  string
	}{
		"/ui":            {200, "text/html; charset=utf-8"},
		"/ui/":           {302, ""},
		"/ui/app.js":     {200, "text/javascript; charset=utf-8"},
		"/ui/api.js":     {200, "text/javascript; charset=utf-8"},
		"/ui/app.css":    {200, "text/css; charset=utf-8"},
		"/ui/nope.js":    {404, "text/plain; charset=utf-8"},
		"/ui/../x":       {404, "text/plain; charset=utf-8"},
		"/ui/index.html": {404, "text/plain; charset=utf-8"},
	} {
		res := get(t, path)
		if res.StatusCode != want.status || (want.ctype != "" && res.Header.Get("Content-Type") != want.ctype) {
			t.Errorf("GET %s: %d %q, want %d %q", path, res.StatusCode, res.Header.Get("Content-Type"), want.status, want.ctype)
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, directive := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, directive+";") && !strings.HasSuffix(csp, directive) {
				t.Errorf("GET %s: policy %q lacks %s", path, csp, directive)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: policy %q allows something unsafe", path, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
	}
}

// TestPageHasNoInlineCodeAndNoMarkupSinks: the policy forbids inline script
// and style, so the page must not need them; agents' text must never be
// parsed as markup.
func TestPageHasNoInlineCodeAndNoMarkupSinks(t *testing.T) {
	body, _ := io.ReadAll(get(t, "/ui").Body)
	page := string(body)
	for _, bad := range []string{"<style", "style=", "onclick", "onload", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html contains %q", bad)
		}
	}
	if strings.Count(page, "<script") != 1 || !strings.Contains(page, `<script type="module" src="ui/app.js"></script>`) {
		t.Error("index.html must load exactly its module, ui/app.js")
	}
	for _, name := range []string{"/ui/app.js", "/ui/api.js", "/ui/render.js", "/ui/inline.js"} {
		src, _ := io.ReadAll(get(t, name).Body)
		for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(src), sink) {
				t.Errorf("%s uses %s", name, sink)
			}
		}
	}
}
