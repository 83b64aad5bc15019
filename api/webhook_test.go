package api_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/testkit"
)

// The webhook the document describes is the one questiond posts: every body,
// with and without --notify-include-text, and for both events, matches its
// schema (which admits no undocumented field), and its headers their
// patterns.
func TestWebhookBodiesMatchTheDocument(t *testing.T) {
	c, err := frameCompiler()
	if err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(docURL + "#/webhooks/questionEvent/post/requestBody/content/application~1json/schema")
	if err != nil {
		t.Fatal(err)
	}
	signature := regexp.MustCompile(`^v1=[0-9a-f]{64}$`)
	created := time.Now().Round(time.Millisecond)
	q := &pending.Question{ID: "que_1", SessionID: "ses_1", AskingSessionID: "ses_2", Owner: "alpha", Client: "Claude Code",
		Directory: "/srv", Message: "Deploy?", CreatedAt: created, Deadline: created.Add(time.Hour),
		Questions: []elicit.QuestionInfo{{Question: "Deploy?", Header: "Deploy", Options: []elicit.QuestionOption{{Label: "Yes"}}}}}
	ended := *q
	ended.Ended = &pending.Outcome{Ending: pending.EndReplied, At: created.Add(time.Minute),
		Result: pending.Result{Action: pending.ActionAccept, Content: elicit.Content{"deploy": true}}, Answers: [][]string{{"Yes"}}}
	for _, includeText := range []bool{false, true} {
		hook, got := testkit.Webhook(t, 2)
		n, err := notify.New(context.Background(), notify.Options{URLs: []string{hook.URL}, Secret: []byte("0123456789abcdef"),
			Link: "http://127.0.0.1:4097/ui", IncludeText: includeText})
		if err != nil {
			t.Fatal(err)
		}
		n.Asked(q)
		n.Ended(&ended)
		for range 2 {
			d := <-got
			r, body := d.Request, d.Body
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(v); err != nil {
				t.Errorf("include text %v, %s: %v\n%s", includeText, r.Header.Get(notify.HeaderEvent), err, body)
			}
			if !signature.MatchString(r.Header.Get(notify.HeaderSignature)) || r.Header.Get(notify.HeaderEventID) == "" {
				t.Errorf("headers: %v", r.Header)
			}
		}
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		hook.Close()
	}
}
