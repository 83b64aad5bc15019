// Package ui tests the operator's web page, /ui, in a real browser: Debian's
// chromium, headless, driven by chromedp against a questiond on a loopback
// port. Screenshots and the browser's console land in each test's artifact
// directory (go test -artifacts; make ui).
package ui
