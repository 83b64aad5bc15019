// Package ui is the operator's web page, /ui: static HTML, CSS and JavaScript
// modules embedded in the binary, served with a policy that lets nothing but
// those files run.
package ui

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is where the page is served.
const Prefix = "/ui"

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy lets the page load its own files and talk to its own
// origin, and nothing else: no inline script or style, no frames around it,
// no form posts anywhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Files returns the page's files: index.html and what it loads.
func Files() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	return sub
}

// Handler serves Prefix (index.html) and the files under Prefix + "/"; other
// names go to notFound. Every answer carries the security headers, a 404
// included.
func Handler(notFound http.Handler) http.Handler {
	files := http.FileServerFS(Files())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		// The files are small and whole: no partial answers (206, 416),
		// which the route's contract does not have.
		r.Header.Del("Range")
		r.Header.Del("If-Range")
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		switch {
		case !ok:
			notFound.ServeHTTP(w, r)
			return
		case name == "":
			serveIndex(w, r)
			return
		case name == "/":
			// The page's links are relative to /ui, so it has no other name;
			// a relative Location also holds behind a proxy's path prefix.
			w.Header().Set("Location", "../ui")
			w.WriteHeader(http.StatusFound)
			return
		}
		// The page has one name; the file server would redirect its other one.
		info, err := fs.Stat(Files(), strings.TrimPrefix(name, "/"))
		if err != nil || info.IsDir() || path.Clean(name) != name || name == "/index.html" {
			notFound.ServeHTTP(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = name
		files.ServeHTTP(w, r2)
	})
}

// serveIndex serves index.html itself: the file server would redirect its
// name to the directory.
func serveIndex(w http.ResponseWriter, r *http.Request) {
	page, err := fs.ReadFile(Files(), "index.html")
	if err != nil {
		http.Error(w, "the page is missing from this build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(page))
}
