package tui

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/testenv"
)

// A restart of questiond under an attached TUI: a question pending before
// it is answered after it, and a question that ended while the TUI was not
// connected (it timed out while questiond was down) leaves no wedged panel.
func TestRestartUnderAnAttachedTUI(t *testing.T) {
	testenv.Heavy(t, "runs questiond and the OpenCode TUI, restarts questiond")
	d := startDaemon(t, daemonOptions{durable: true})
	const session = "ses_e2erestart"

	// The agent is the Go client: it waits across the restart by polling
	// the question's id.
	agent, err := client.New(client.Options{Server: d.URL, PollWait: 2 * time.Second, MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	form := twoQuestionForm(session)
	schema, err := json.Marshal(form["requestedSchema"])
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan elicitResult, 1)
	go func() {
		res, err := agent.Elicit(t.Context(), client.Params{SessionID: session, Message: form["message"].(string), RequestedSchema: schema})
		r := elicitResult{err: err}
		if err == nil {
			r.Action = res.Action
			raw, _ := json.Marshal(res.Content)
			r.err = json.Unmarshal(raw, &r.Content)
		}
		answer <- r
	}()
	d.waitPending(session, 1)

	u := attach(t, "tui", d.URL, "--session", session)
	// The panel shows as soon as the event stream replays the question;
	// the session's history loads after it. A restart before that load
	// ends sends the TUI home ("Session not found"), so wait for it.
	u.waitFor("panel", "Database", panelHint, "Asked 2 questions")
	d.restart()
	u.shot("after-restart")
	d.waitPending(session, 1)
	answerForm(t, u, answer)
	expectFormAnswer(t, answer, 30*time.Second, "after the restart the agent")
	u.waitGone("answered", panelHint)

	// A question that times out while questiond is down: the restarted
	// questiond ends it at start, before the TUI's stream is back.
	status, body := d.call(http.MethodPost, "/elicitations", map[string]any{
		"sessionID": session,
		"message":   "The deploy is ready.",
		"timeout":   "6s",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{
			"deploy": map[string]any{"type": "string", "title": "Deploy", "description": "Deploy to production now?", "enum": []any{"Yes", "No"}},
		}},
	})
	var asked struct {
		ID       string
		Deadline time.Time
	}
	if status != http.StatusCreated || json.Unmarshal(body, &asked) != nil {
		t.Fatalf("POST /elicitations: %d %s", status, body)
	}
	u.waitFor("second-question", "Deploy to production now?", panelHint)
	d.stop()
	// Waiting for questiond's clock, not for the screen: the question must
	// be overdue when questiond starts again.
	time.Sleep(time.Until(asked.Deadline) + 500*time.Millisecond)
	d.start()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ended, err := agent.Get(ctx, asked.ID, 0)
	if err != nil || ended.Status == client.StatusPending {
		t.Fatalf("the overdue question after the restart: %+v, %v", ended, err)
	}
	u.shot("ended-while-away")
	// The panel may still show it (the TUI was away when it ended); the
	// reconnect or, at the latest, answering it must close the panel
	// rather than wedge the session.
	u.keys("1")
	u.waitGone("unwedged", "Deploy to production now?", panelHint)
	if exited, status := u.exited(); exited {
		t.Fatalf("the TUI exited (%s)", status)
	}
}
