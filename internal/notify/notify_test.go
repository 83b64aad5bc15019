package notify_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/pending"
)

func TestDeliveriesAreSignedAndVerify(t *testing.T) {
	secret := []byte("a shared secret of some length")
	r := newReceiver(t, always(http.StatusOK))
	n := start(t, notify.Options{URLs: []string{r.URL + "/hook"}, Secret: secret})
	n.Asked(question("que_1"))
	d := r.next(t)
	if !verifyWebhook(secret, d.header, d.body, time.Now(), 5*time.Minute) {
		t.Fatalf("the signature does not verify: %v", d.header)
	}
	if !notify.Verify(secret, d.header.Get(notify.HeaderTimestamp), d.header.Get(notify.HeaderSignature), d.body, time.Now(), time.Minute) {
		t.Fatal("notify.Verify refuses a delivery")
	}
	if verifyWebhook([]byte("another secret"), d.header, d.body, time.Now(), 5*time.Minute) {
		t.Fatal("the signature verifies with another secret")
	}
	tampered := append([]byte(nil), d.body...)
	tampered[len(tampered)-2] = ' '
	if verifyWebhook(secret, d.header, tampered, time.Now(), 5*time.Minute) {
		t.Fatal("the signature verifies a changed body")
	}
	if verifyWebhook(secret, d.header, d.body, time.Now().Add(10*time.Minute), 5*time.Minute) {
		t.Fatal("a replay 10 minutes later verifies")
	}
	body := d.decode(t)
	if d.header.Get(notify.HeaderEventID) != body["id"] || d.header.Get(notify.HeaderEvent) != notify.EventAsked {
		t.Fatalf("headers %v do not name the event %v", d.header, body["id"])
	}
}

func TestUnsignedWithoutSecret(t *testing.T) {
	r := newReceiver(t, always(http.StatusNoContent))
	n := start(t, notify.Options{URLs: []string{r.URL}})
	n.Asked(question("que_1"))
	if h := r.next(t).header; h.Get(notify.HeaderSignature) != "" || h.Get(notify.HeaderTimestamp) != "" {
		t.Fatalf("signed without a secret: %v", h)
	}
}

func TestBodyIsASlackMessageWithoutTextByDefault(t *testing.T) {
	r := newReceiver(t, always(http.StatusOK))
	n := start(t, notify.Options{URLs: []string{r.URL}, Link: "https://q.example/ui"})
	q := question("que_1")
	n.Asked(q)
	n.Ended(replied(q))
	asked, ended := r.next(t), r.next(t)
	for _, d := range []delivered{asked, ended} {
		for _, secret := range []string{"secret plan", "Deploy now?", "Which region?", "eu-north", "Yes"} {
			if strings.Contains(string(d.body), secret) {
				t.Errorf("the default body tells %q: %s", secret, d.body)
			}
		}
	}
	a := asked.decode(t)
	text, _ := a["text"].(string)
	for _, want := range []string{"`builder`", "`ses_1`", "`Deploy, Region`", "`/srv/&lt;app&gt;`", "<https://q.example/ui|"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "\n") || strings.Contains(text, "<app>") {
		t.Errorf("text is not one escaped line: %q", text)
	}
	question := a["question"].(map[string]any)
	if a["event"] != notify.EventAsked || question["id"] != "que_1" || question["owner"] != "builder" ||
		question["client"] != "Claude Code" || question["directory"] != "/srv/<app>" || question["createdAt"] == nil {
		t.Errorf("asked body: %s", asked.body)
	}
	e := ended.decode(t)
	ending := e["ending"].(map[string]any)
	if e["event"] != notify.EventEnded || ending["ending"] != "replied" || ending["action"] != "accept" || ending["at"] == nil {
		t.Errorf("ended body: %s", ended.body)
	}
	if text, _ := e["text"].(string); !strings.Contains(text, "`Deploy, Region` of agent `builder` in session `ses_1`") || !strings.Contains(text, "ended: replied (accept)") {
		t.Errorf("ended text: %q", text)
	}
	if a["id"] == e["id"] {
		t.Error("two events share an id")
	}
}

func TestIncludeTextAddsMessageQuestionsAndAnswers(t *testing.T) {
	r := newReceiver(t, always(http.StatusOK))
	n := start(t, notify.Options{URLs: []string{r.URL}, IncludeText: true})
	q := question("que_1")
	n.Asked(q)
	n.Ended(replied(q))
	asked, ended := string(r.next(t).body), string(r.next(t).body)
	for _, want := range []string{`"message":"Deploy the secret plan?"`, `"question":"Which region?"`, "secret plan?`"} {
		if !strings.Contains(asked, want) {
			t.Errorf("asked body lacks %s: %s", want, asked)
		}
	}
	for _, want := range []string{`"region":"eu-north"`, `"answers":[["Yes"],["eu-north"]]`} {
		if !strings.Contains(ended, want) {
			t.Errorf("ended body lacks %s: %s", want, ended)
		}
	}
}

func TestRetriesAfterServerErrorsUntilDelivered(t *testing.T) {
	log, logs := observed()
	r := newReceiver(t, func(n int) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	n := start(t, notify.Options{URLs: []string{r.URL + "/services/T0/B0/tokentokentoken"}, Logger: log,
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	n.Asked(question("que_1"))
	first := r.next(t).header.Get(notify.HeaderEventID)
	for range 3 {
		if id := r.next(t).header.Get(notify.HeaderEventID); id != first {
			t.Fatalf("a retry has event id %s, the first attempt %s", id, first)
		}
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if failing := logs.FilterMessageSnippet("webhook failing").Len(); failing != 1 {
		t.Errorf("%d failure lines for three failures, want 1", failing)
	}
	if logs.FilterMessageSnippet("webhook recovered").Len() != 1 {
		t.Error("the recovery is not logged")
	}
	for _, entry := range logs.All() {
		for _, v := range entry.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, "token") {
				t.Errorf("a log line shows the webhook's path: %s %v", entry.Message, entry.ContextMap())
			}
		}
	}
}

func TestRefusedForGoodIsNotRetried(t *testing.T) {
	r := newReceiver(t, always(http.StatusNotFound))
	n := start(t, notify.Options{URLs: []string{r.URL}, MinBackoff: time.Millisecond})
	n.Asked(question("que_1"))
	n.Asked(question("que_2"))
	a, b := r.next(t).decode(t), r.next(t).decode(t)
	if a["question"].(map[string]any)["id"] != "que_1" || b["question"].(map[string]any)["id"] != "que_2" {
		t.Fatalf("a 404 was retried: %v then %v", a, b)
	}
}

// A receiver that takes every request and never answers holds one attempt
// at a time; the queue behind it keeps its newest notifications.
func TestFullQueueDropsTheOldest(t *testing.T) {
	log, logs := observed()
	release := make(chan struct{})
	arrived := make(chan string, 10)
	hang := newHangingReceiver(t, release, arrived)
	n := start(t, notify.Options{URLs: []string{hang.URL}, QueueLength: 2, Logger: log, AttemptTimeout: time.Minute})
	n.Asked(question("que_1"))
	if id := <-arrived; id != "que_1" {
		t.Fatalf("first delivery is %s", id)
	}
	for _, id := range []string{"que_2", "que_3", "que_4", "que_5"} {
		n.Asked(question(id)) // returns although the receiver hangs
	}
	close(release)
	for _, want := range []string{"que_4", "que_5"} {
		select {
		case got := <-arrived:
			if got != want {
				t.Fatalf("delivered %s, want %s (the oldest are dropped)", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not delivered", want)
		}
	}
	if full := logs.FilterMessageSnippet("queue full").Len(); full != 1 {
		t.Errorf("a full queue is logged %d times, want once", full)
	}
}

func TestCloseStopsAHangingAttempt(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	arrived := make(chan string, 10)
	hang := newHangingReceiver(t, release, arrived)
	n, err := notify.New(context.Background(), notify.Options{URLs: []string{hang.URL}, Grace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.Asked(question("que_1"))
	<-arrived
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Close waited out its context for a hanging receiver")
	}
}

func TestOutboxDeliversAfterARestart(t *testing.T) {
	bolt, err := pending.OpenBolt(filepath.Join(t.TempDir(), "q.db"), pending.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bolt.Close() })
	outbox, err := bolt.Table("notify-outbox")
	if err != nil {
		t.Fatal(err)
	}
	down := newReceiver(t, always(http.StatusServiceUnavailable))
	up := newReceiver(t, always(http.StatusOK))
	// Both runs name the same URL: the endpoint is the URL, not the server.
	proxy := &switchingReceiver{target: down}
	front := newReceiverHandler(t, proxy)
	opts := notify.Options{URLs: []string{front.URL}, Outbox: outbox, MinBackoff: time.Hour, Grace: time.Millisecond}
	first, err := notify.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	first.Asked(question("que_1"))
	first.Asked(question("que_2"))
	want := down.next(t).header.Get(notify.HeaderEventID)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if kept := records(t, outbox); kept != 2 {
		t.Fatalf("outbox holds %d notifications after the stop, want 2", kept)
	}
	proxy.set(up)
	second := start(t, opts)
	got := up.next(t)
	if id := got.header.Get(notify.HeaderEventID); id != want {
		t.Fatalf("first delivery after the restart is %s, want %s", id, want)
	}
	up.next(t)
	// The receiver has the request before the notifier has its answer:
	// a delivered notification leaves the outbox once the 200 is read.
	for deadline := time.Now().Add(10 * time.Second); records(t, outbox) != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("outbox holds %d delivered notifications", records(t, outbox))
		}
	}
	if err := second.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if kept := records(t, outbox); kept != 0 {
		t.Fatalf("outbox holds %d delivered notifications after the stop", kept)
	}
}

func TestOutboxForgetsEndpointsNoLongerConfigured(t *testing.T) {
	outbox := &memoryOutbox{records: map[string][]byte{}}
	down := newReceiver(t, always(http.StatusServiceUnavailable))
	first := start(t, notify.Options{URLs: []string{down.URL}, Outbox: outbox, MinBackoff: time.Hour, Grace: time.Millisecond})
	first.Asked(question("que_1"))
	down.next(t)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(outbox.records) != 1 {
		t.Fatalf("outbox: %v", outbox.records)
	}
	other := newReceiver(t, always(http.StatusOK))
	start(t, notify.Options{URLs: []string{other.URL}, Outbox: outbox})
	if len(outbox.records) != 0 {
		t.Fatalf("a record of a webhook no longer configured is kept: %v", outbox.records)
	}
}

func TestBadURLsAreRefusedWithoutQuotingThem(t *testing.T) {
	for _, raw := range []string{"hooks.example/secret-token", "ftp://h/secret-token", "https:///secret-token", "://secret-token"} {
		_, err := notify.New(context.Background(), notify.Options{URLs: []string{"https://ok.example/", raw}})
		if err == nil || !strings.Contains(err.Error(), "webhook 2") || strings.Contains(err.Error(), "secret-token") {
			t.Errorf("%q: %v", raw, err)
		}
	}
	_, err := notify.New(context.Background(), notify.Options{URLs: []string{"https://a.example/x", "https://b.example/", "https://a.example/x"}})
	if err == nil || !strings.Contains(err.Error(), "webhook 3 repeats webhook 1") {
		t.Errorf("a repeated URL: %v", err)
	}
}

// The Slack text shows the agent's message as operators see it elsewhere:
// a right-to-left override cannot reorder what follows it.
func TestTextNeutralisesBidiOverrides(t *testing.T) {
	r := newReceiver(t, always(http.StatusOK))
	n := start(t, notify.Options{URLs: []string{r.URL}, IncludeText: true})
	q := question("que_1")
	q.Message = "Deny \u202Eevorppa"
	n.Asked(q)
	var body struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(r.next(t).body, &body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body.Text, "`Deny \uFFFDevorppa`") || strings.ContainsRune(body.Text, '\u202E') {
		t.Errorf("text %q", body.Text)
	}
}
