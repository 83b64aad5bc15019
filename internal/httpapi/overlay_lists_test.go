package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
)

// listsAsked counts the GET /question the server got.
func (f *fakeOpenCode) listsAsked() int {
	n := 0
	for _, r := range f.requests() {
		if r.Method == http.MethodGet && r.Path == "/question" {
			n++
		}
	}
	return n
}

// listIDs lists the pending questions through questiond, as an operator.
func listIDs(t *testing.T, h *harness) []string {
	t.Helper()
	res := h.do(http.MethodGet, "/question", nil, "Authorization", basic("opencode", upstreamPassword))
	if res.Status != http.StatusOK {
		t.Fatalf("GET /question: %d %s", res.Status, res.Body)
	}
	var list []struct{ ID string }
	res.json(t, &list)
	ids := make([]string, len(list))
	for i, q := range list {
		ids[i] = q.ID
	}
	return ids
}

// While questiond hears the server's stream, GET /question does not ask
// the server again until a question.* event of the server's says its list
// changed; a client that heard of the change through questiond (a relayed
// stream, a reply it forwarded) lists the new list at once.
func TestTheOverlayKeepsTheServersListBetweenItsQuestionEvents(t *testing.T) {
	h, up, server := overlayHarnessWith(t, pending.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { defer close(watched); server.Watch(ctx) }()
	t.Cleanup(func() { cancel(); <-watched })

	// Once the watch hears the server, two lists in a row ask it once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		listIDs(t, h)
		before := up.listsAsked()
		listIDs(t, h)
		if up.listsAsked() == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("every GET /question still asks the server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := up.listsAsked()
	for range 20 {
		if ids := listIDs(t, h); len(ids) != 1 || ids[0] != upstreamQuestionID {
			t.Fatalf("listed %v, want the server's question", ids)
		}
	}
	if n := up.listsAsked() - before; n != 0 {
		t.Fatalf("20 lists without a change asked the server %d times, want none", n)
	}

	// A question asked at the server: a client that hears of it on a
	// stream through questiond lists it at once.
	web := h.openStream("/event", "Authorization", basic("opencode", upstreamPassword))
	web.expect(t, "server.connected")
	const second = "que_00000000000200000000000002"
	up.setList(`[` + theirQuestion(upstreamQuestionID, "ses_upstream") + `,` + theirQuestion(second, "ses_root") + `]`)
	up.emitOn(false, "question.asked", theirQuestion(second, "ses_root")) // questiond's own watch of /global/event has not heard of it yet
	if id := requestID(t, web.expect(t, "question.asked")); id != second {
		t.Fatalf("heard %s, want %s", id, second)
	}
	if ids := listIDs(t, h); len(ids) != 2 || ids[1] != second {
		t.Fatalf("after hearing question.asked, listed %v, want the new question too", ids)
	}

	// A reply questiond forwards: the next list is the server's new one.
	before = up.listsAsked()
	listIDs(t, h)
	if up.listsAsked() != before {
		t.Fatal("the list was asked for again without a change")
	}
	res := h.do(http.MethodPost, "/question/"+second+"/reply", `{"answers":[["x"]]}`, "Authorization", basic("opencode", upstreamPassword))
	if res.Status != http.StatusOK {
		t.Fatalf("forwarded reply: %d %s", res.Status, res.Body)
	}
	if ids := listIDs(t, h); len(ids) != 0 {
		t.Fatalf("after a forwarded reply, listed %v, want the server's empty list", ids)
	}
}

// A TUI that missed how one of questiond's questions ended keeps its panel
// until it hears of the ending, so a reply to it gets OpenCode's 404 and the
// TUI's streams the ending again: while the store retains the question,
// the ending it had; once the store forgot it, question.rejected in the
// session it was shown in. Other clients hear of an ending once.
func TestTheOverlayTellsTheTUIOfEndingsItMissed(t *testing.T) {
	h, _, _ := overlayHarnessWith(t, pending.Options{MaxRetainedPerAgent: 1})
	op := basic("opencode", upstreamPassword)
	askInRoot := func() string {
		form := seedForm()
		form["sessionID"] = "ses_root"
		res := h.do(http.MethodPost, "/elicitations", form, "Authorization", bearerAuth(alphaToken))
		if res.Status != http.StatusCreated {
			t.Fatalf("POST /elicitations: %d %s", res.Status, res.Body)
		}
		var q struct{ ID string }
		res.json(t, &q)
		return q.ID
	}
	withdraw := func(id string) {
		if res := h.do(http.MethodDelete, "/elicitations/"+id, nil, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusOK {
			t.Fatalf("DELETE /elicitations/%s: %d %s", id, res.Status, res.Body)
		}
	}

	// The TUI is shown the first question, then goes away; meanwhile the
	// question ends and, once a second one has ended, is forgotten.
	tui, _ := openTUIAndWeb(t, h, "/global/event")
	first := askInRoot()
	if id := requestID(t, tui.expect(t, "question.asked")); id != first {
		t.Fatalf("TUI shown %s, want %s", id, first)
	}
	tui.cancel() // the TUI goes away
	withdraw(first)
	second := askInRoot()
	withdraw(second)
	if res := h.do(http.MethodGet, "/elicitations/"+first, nil, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusNotFound {
		t.Fatalf("GET /elicitations/%s: %d, want it forgotten (404)", first, res.Status)
	}

	tui, web := openTUIAndWeb(t, h, "/global/event")
	for _, c := range []struct {
		id, why string
	}{{second, "ended, retained"}, {first, "forgotten"}} {
		res := h.do(http.MethodPost, "/question/"+c.id+"/reply", `{"answers":[["SY215C"],[]]}`, "Authorization", op)
		if res.Status != http.StatusNotFound || !json.Valid(res.Body) {
			t.Fatalf("reply to a question %s: %d %s, want OpenCode's 404", c.why, res.Status, res.Body)
		}
		f := tui.expect(t, "question.rejected")
		var p struct{ SessionID, RequestID string }
		if err := json.Unmarshal(f.Properties, &p); err != nil || p.RequestID != c.id || p.SessionID != "ses_root" {
			t.Fatalf("TUI heard %s for the question %s, want question.rejected of %s in ses_root", f.Raw, c.why, c.id)
		}
	}
	web.silent(t, 300*time.Millisecond)
}
