package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/testkit"
)

// Webhook URLs and their secret come from the environment only, and a bad
// one is named by its position, never quoted: it may hold a token.
func TestWebhookSettings(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"bad URL":         {env: map[string]string{"QUESTIOND_NOTIFY_URLS": "https://ok.example/a, hooks.example/token-xyz"}, want: "QUESTIOND_NOTIFY_URLS: entry 2"},
		"short secret":    {env: map[string]string{"QUESTIOND_NOTIFY_SECRET": "short"}, want: "QUESTIOND_NOTIFY_SECRET must be at least 16"},
		"URLs as a flag":  {args: []string{"--notify-urls", "https://hooks.example/"}, want: "unknown flag"},
		"bad public URL":  {args: []string{"--public-url", "q.example"}, want: "--public-url"},
		"zero max age":    {args: []string{"--notify-max-age", "0s"}, want: "--notify-max-age must be positive"},
		"negative queue":  {args: []string{"--notify-queue", "-1"}, want: "--notify-queue must be positive"},
		"secret as flag?": {args: []string{"--notify-secret", "0123456789abcdef"}, want: "unknown flag"},
	} {
		_, err := parseConfig(tc.args, envOf(tc.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "token-xyz") {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
	c, err := parseConfig([]string{"--notify-include-text"}, envOf(map[string]string{
		"QUESTIOND_NOTIFY_URLS": " https://a.example/x ,http://127.0.0.1:9/y,", "QUESTIOND_NOTIFY_MAX_AGE": "30m",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.notifyURLs) != 2 || !c.notifyIncludeText || c.notifyMaxAge != 30*time.Minute {
		t.Fatalf("parsed %q, include text %v, max age %s", c.notifyURLs, c.notifyIncludeText, c.notifyMaxAge)
	}
}

// The whole program notifies a webhook, signed, linking to --public-url's
// page, with the text only when --notify-include-text asks for it.
func TestDaemonNotifiesWebhooks(t *testing.T) {
	t.Parallel()
	secret := "0123456789abcdef-secret"
	for _, includeText := range []bool{false, true} {
		hook, got := testkit.Webhook(t, 10)
		env := map[string]string{"QUESTIOND_NOTIFY_URLS": hook.URL + "/hook", "QUESTIOND_NOTIFY_SECRET": secret}
		args := []string{"--public-url", "https://q.example/base/"}
		if includeText {
			args = append(args, "--notify-include-text")
		}
		base, stop := startDaemon(t, env, args...)
		if code, body := sendJSON(t, "POST", base+"/elicitations", twoQuestions); code != http.StatusCreated {
			t.Fatalf("ask: %d %s", code, body)
		}
		var r *http.Request
		var body []byte
		select {
		case d := <-got:
			r, body = d.Request, d.Body
		case <-time.After(10 * time.Second):
			t.Fatal("the webhook got nothing")
		}
		if !notify.Verify([]byte(secret), r.Header.Get(notify.HeaderTimestamp), r.Header.Get(notify.HeaderSignature), body, time.Now(), time.Minute) {
			t.Errorf("the signature does not verify: %v", r.Header)
		}
		var b notify.Body
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Link != "https://q.example/base/ui" || !strings.Contains(b.Text, "<https://q.example/base/ui|") {
			t.Errorf("link %q in text %q", b.Link, b.Text)
		}
		if has := strings.Contains(string(body), "Diagnose"); has != includeText {
			t.Errorf("with --notify-include-text=%v the body has the message: %v\n%s", includeText, has, body)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		hook.Close()
	}
}
