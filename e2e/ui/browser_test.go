package ui

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/questiond/questiond/internal/testenv"
)

const chromiumPath = "/usr/bin/chromium"

// needChromium makes sure Debian's chromium is here: when it is missing and
// the tests run as root on Debian (as CI does), it is installed with apt-get.
func needChromium(t *testing.T) {
	t.Helper()
	testenv.Heavy(t, "drives a real browser")
	testenv.NeedDebianPackage(t, "chromium", chromiumPath)
}

// browser is one headless chromium with a fresh profile and one tab. It
// answers the page's Basic challenge with the operator's credentials, as a
// person types them into the browser's prompt, and records the console.
type browser struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	console []string
	crashes []string // uncaught exceptions and policy violations
	rules   []requestRule
}

// requestRule holds back or fails the page's requests whose URL contains
// match (is match, after a leading "="), standing in for a slow or broken
// network between page and daemon.
type requestRule struct {
	match string
	delay time.Duration
	fail  bool
}

// slow delays the page's requests whose URL contains match.
func (b *browser) slow(match string, delay time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rules = append(b.rules, requestRule{match: match, delay: delay})
}

// failing makes the page's requests whose URL contains match fail as a lost
// connection does, until the returned function is called.
func (b *browser) failing(match string) (heal func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rules = append(b.rules, requestRule{match: match, fail: true})
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.rules = slices.DeleteFunc(b.rules, func(r requestRule) bool { return r.match == match && r.fail })
	}
}

// ruleFor is the first rule that applies to url, or none.
func (b *browser) ruleFor(url string) requestRule {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.rules {
		if whole, ok := strings.CutPrefix(r.match, "="); ok && url == whole || !ok && strings.Contains(url, r.match) {
			return r
		}
	}
	return requestRule{}
}

// beforePageScripts runs script in every document the tab loads, before the
// page's own scripts.
func (b *browser) beforePageScripts(script string) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script}); err != nil {
		b.t.Fatal(err)
	}
}

func newBrowser(t *testing.T, user, password string) *browser {
	t.Helper()
	needChromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	b := &browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		b.mu.Lock()
		defer b.mu.Unlock()
		_ = os.WriteFile(filepath.Join(t.ArtifactDir(), "console.log"), []byte(strings.Join(b.console, "\n")+"\n"), 0o644)
		for _, c := range b.crashes {
			t.Errorf("the page failed: %s", c)
		}
	})
	if err := chromedp.Listen(ctx, b.record(user, password)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)}); err != nil {
		t.Fatal(err)
	}
	for _, enable := range []func() error{
		func() error { _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); return err },
	} {
		if err := enable(); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// record keeps the console and answers paused requests; commands must run
// outside the listener, so they go to goroutines.
func (b *browser) record(user, password string) func(any) {
	return func(ev any) {
		switch ev := ev.(type) {
		case *fetch.EventRequestPaused:
			rule := b.ruleFor(ev.Request.URL)
			go func() {
				time.Sleep(rule.delay)
				if rule.fail {
					b.note(false, "failing "+ev.Request.URL)
					_, _ = chromedp.Call(b.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionRefused})
					return
				}
				_, _ = chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			}()
		case *fetch.EventAuthRequired:
			response := fetch.AuthChallengeResponse{Response: "ProvideCredentials", Username: user, Password: password}
			if password == "" {
				response = fetch.AuthChallengeResponse{Response: "CancelAuth"}
			}
			b.note(false, "auth challenge for "+ev.Request.URL)
			go func() {
				_, _ = chromedp.Call(b.ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: &response})
			}()
		case *runtime.EventExceptionThrown:
			b.note(true, "exception: "+ev.ExceptionDetails.Text+" "+describe(ev.ExceptionDetails.Exception))
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				args = append(args, describe(a))
			}
			b.note(false, string(ev.Type)+": "+strings.Join(args, " "))
		case *log.EventEntryAdded:
			crash := ev.Entry.Level == "error" && strings.Contains(ev.Entry.Text, "Content Security Policy")
			b.note(crash, "log "+string(ev.Entry.Level)+": "+ev.Entry.Text)
		}
	}
}

func describe(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		return string(o.Value)
	}
	return o.Description
}

func (b *browser) note(crash bool, line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.console = append(b.console, time.Now().Format("15:04:05.000 ")+line)
	if crash {
		b.crashes = append(b.crashes, line)
	}
}

// do runs the steps, failing the test (with a screenshot) on an error.
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.screenshot("failure")
		b.t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expression string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression, opts...))
	if err != nil {
		b.t.Fatalf("%s: %v", expression, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds.
func (b *browser) waitFor(what, condition string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](condition, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		b.screenshot("failure")
		b.t.Fatalf("%s: %v", what, err)
	}
}

// screenshot saves the whole page as name.png among the test's artifacts.
func (b *browser) screenshot(name string) []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return nil
	}
	if err := os.WriteFile(filepath.Join(b.t.ArtifactDir(), name+".png"), png, 0o644); err != nil {
		b.t.Error(err)
	}
	return png
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

func (b *browser) clear(sel string) {
	b.t.Helper()
	b.do(clearField(sel))
}
