package ui

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/testserver"
)

// TestEndedWhileAwayStaysAsEnded: a question that ends while the page is
// cut off from the daemon (restarted here, the page's reconnections failing
// meanwhile) shows, once the page is back, under "Just answered" as having
// ended while it was reconnecting, not as anything the page cannot know.
func TestEndedWhileAwayStaysAsEnded(t *testing.T) {
	boltPath := filepath.Join(t.TempDir(), "questions.db")
	start := func(addr string) *testserver.Server {
		srv, err := testserver.Start(testserver.Config{
			Addr: addr, BoltPath: boltPath,
			API:    httpapi.Options{Auth: httpapi.Auth{OperatorPassword: operatorPassword}, ListenAddr: addr},
			Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Stop() })
		return srv
	}
	first := start("127.0.0.1:0")
	d := &daemon{t: t, URL: first.URL}
	id := ask(d, "Answered while the page was away")
	b := openPage(t, d)
	b.do(chromedp.WaitVisible(card(id)))

	heal := b.failing("/global/event")
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the page is reconnecting", `!document.getElementById("status").textContent.startsWith("Connected")`)
	start(first.Addr)
	if status, body := d.send(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["red"],["while away"]]}`, basic(operatorUser, operatorPassword)); status != http.StatusOK {
		t.Fatalf("reply through the API: %d %s", status, body)
	}
	heal()
	b.do(chromedp.WaitNotPresent(card(id)))
	if got := eval[string](b, `document.querySelector("#done-`+id+` .outcome").textContent`); got != "Ended" {
		t.Errorf("the question that ended while the page was away shows as %q", got)
	}
	if got := eval[string](b, `document.getElementById("confirmation").textContent`); got != "" {
		t.Errorf("confirmation %q for an ending that was not the operator's", got)
	}
}
