package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// TestEveryEndingIsAnnounced checks that each way a question can end gives
// the agent the right MCP result and gives operators an ending event, so no
// client keeps showing a question nobody waits for.
func TestEveryEndingIsAnnounced(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		timeout    string
		end        func(h *harness, id string)
		wantEvent  string
		wantAction string
		wantEnding string
	}{
		{"reply", "", func(h *harness, id string) {
			h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY365H"],["Overheating","Low power"]]}`)
		}, "question.replied", "accept", "replied"},
		{"reject", "", func(h *harness, id string) {
			h.do(http.MethodPost, "/question/"+id+"/reject", nil)
		}, "question.rejected", "cancel", "rejected"},
		{"reject as decline", "", func(h *harness, id string) {
			h.do(http.MethodPost, "/question/"+id+"/reject", `{"action":"decline"}`)
		}, "question.rejected", "decline", "rejected"},
		{"withdraw", "", func(h *harness, id string) {
			h.do(http.MethodDelete, "/elicitations/"+id, nil)
		}, "question.rejected", "cancel", "withdrawn"},
		{"timeout", "50ms", func(h *harness, id string) {}, "question.rejected", "cancel", "timeout"},
		{"shutdown", "", func(h *harness, id string) {
			h.api.Questions().Drain()
			_, _ = h.store.SettleAll(context.Background(), pending.Outcome{Ending: pending.EndShutdown, Result: pending.Result{Action: pending.ActionCancel}})
		}, "question.rejected", "cancel", "shutdown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, httpapi.Options{})
			events := h.openStream("/global/event")
			events.expect(t, "server.connected")
			form := seedForm()
			if c.timeout != "" {
				form["timeout"] = c.timeout
			}
			id := h.create(form).ID
			events.expect(t, "question.asked")
			c.end(h, id)
			ended := events.expect(t, c.wantEvent)
			var props struct{ RequestID string }
			_ = json.Unmarshal(ended.Properties, &props)
			if props.RequestID != id {
				t.Fatalf("%s for %s, want %s", c.wantEvent, props.RequestID, id)
			}
			var got created
			h.do(http.MethodGet, "/elicitations/"+id+"?wait=5s", nil).json(t, &got)
			if got.Status != "resolved" || got.Result == nil || got.Result.Action != c.wantAction || got.Ending != c.wantEnding {
				t.Fatalf("agent sees %+v, want resolved/%s/%s", got, c.wantAction, c.wantEnding)
			}
			if c.wantAction == "accept" {
				want := `{"model":"SY365H","symptoms":["Low power","Overheating"]}`
				if b, _ := json.Marshal(got.Result.Content); string(b) != want {
					t.Errorf("content %s, want %s", b, want)
				}
			} else if got.Result.Content != nil {
				t.Errorf("%s result carries content %v", c.wantAction, got.Result.Content)
			}
			var listed []any
			h.do(http.MethodGet, "/question", nil).json(t, &listed)
			if len(listed) != 0 {
				t.Errorf("an ended question is still listed: %v", listed)
			}
		})
	}
}

// TestAgentDisconnectWithdraws: when the caller of POST /elicit goes away,
// the question ends and operators see question.rejected.
func TestAgentDisconnectWithdraws(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(seedForm())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/elicit", bytesReader(body))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
	}()
	var asked struct{ ID string }
	_ = json.Unmarshal(events.expect(t, "question.asked").Properties, &asked)
	cancel()
	<-done
	var props struct{ RequestID string }
	_ = json.Unmarshal(events.expect(t, "question.rejected").Properties, &props)
	if props.RequestID != asked.ID {
		t.Fatalf("rejected %s, want %s", props.RequestID, asked.ID)
	}
	var got created
	h.do(http.MethodGet, "/elicitations/"+asked.ID, nil).json(t, &got)
	if got.Ending != "disconnected" || got.Result == nil || got.Result.Action != "cancel" {
		t.Fatalf("after disconnect the elicitation is %+v", got)
	}
}

// TestNewStreamsReceivePendingQuestions: a client that connects after a
// question was asked still gets question.asked for it, right after
// server.connected, on both stream routes and only in its scope.
func TestNewStreamsReceivePendingQuestions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	form := seedForm()
	form["directory"] = "/srv/a"
	a := h.create(form).ID
	form["directory"] = "/srv/b"
	b := h.create(form).ID
	ended := h.create(seedForm()).ID
	h.do(http.MethodDelete, "/elicitations/"+ended, nil)

	for path, want := range map[string][]string{
		"/event":                   {a, b},
		"/events?directory=/srv/a": {a},
		"/global/event":            {a, b},
	} {
		s := h.openStream(path)
		s.expect(t, "server.connected")
		for _, id := range want {
			var q struct{ ID string }
			_ = json.Unmarshal(s.expect(t, "question.asked").Properties, &q)
			if q.ID != id {
				t.Fatalf("%s: replayed %s, want %s", path, q.ID, id)
			}
		}
		// Nothing else was replayed: the next event is a fresh question.
		fresh := h.create(seedForm()).ID
		var q struct{ ID string }
		_ = json.Unmarshal(s.expect(t, "question.asked").Properties, &q)
		if q.ID != fresh {
			t.Fatalf("%s: got %s after the replay, want the fresh %s", path, q.ID, fresh)
		}
		h.do(http.MethodDelete, "/elicitations/"+fresh, nil)
		s.expect(t, "question.rejected")
	}
}

func TestLongPollReturnsPendingWhenWaitRunsOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	id := h.create(seedForm()).ID
	start := time.Now()
	var got created
	h.do(http.MethodGet, "/elicitations/"+id+"?wait=100ms", nil).json(t, &got)
	if got.Status != "pending" || got.ID != id {
		t.Fatalf("got %+v, want pending", got)
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Fatalf("the long-poll returned before its wait ran out")
	}
}

// TestReleaseLetsWaitersGoWithoutEndingQuestions is the shutdown of a daemon
// whose store keeps pending questions: waiting agents are let go (a
// long-poll sees "pending", POST /elicit a 503 naming the question), and the
// question itself stays pending.
func TestReleaseLetsWaitersGoWithoutEndingQuestions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	id := h.create(seedForm()).ID
	events.expect(t, "question.asked")

	poll := make(chan response, 1)
	elicit := make(chan response, 1)
	go func() {
		res, err := h.request(http.MethodGet, "/elicitations/"+id+"?wait=1m", nil)
		if err != nil {
			t.Error(err)
		}
		poll <- res
	}()
	go func() {
		res, err := h.request(http.MethodPost, "/elicit", seedForm())
		if err != nil {
			t.Error(err)
		}
		elicit <- res
	}()
	events.expect(t, "question.asked") // the /elicit question is stored and waiting
	if err := h.api.Questions().Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	var got created
	res := <-poll
	res.json(t, &got)
	if res.Status != http.StatusOK || got.Status != "pending" {
		t.Fatalf("long-poll after Release: %d %s, want 200 pending", res.Status, res.Body)
	}
	res = <-elicit
	waiting := res.Header.Get("X-Questiond-Request-Id")
	if res.Status != http.StatusServiceUnavailable || waiting == "" || !strings.Contains(string(res.Body), "GET /elicitations/"+waiting) {
		t.Fatalf("POST /elicit after Release: %d %s", res.Status, res.Body)
	}
	var listed []struct{ ID string }
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 2 {
		t.Fatalf("Release ended questions: %v", listed)
	}
	if res := h.do(http.MethodPost, "/elicitations", seedForm()); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("create after Release: %d %s, want 503", res.Status, res.Body)
	}
	// An ending now could no longer be announced: it is refused, and the
	// question stays pending.
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY215C"],[]]}`); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("reply after Release: %d %s, want 503", res.Status, res.Body)
	}
	if res := h.do(http.MethodDelete, "/elicitations/"+id, nil); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("withdrawal after Release: %d %s, want 503", res.Status, res.Body)
	}
	if q, err := h.store.Get(context.Background(), id); err != nil || q.Ended != nil {
		t.Fatalf("after refused endings the question is %+v %v, want pending", q, err)
	}
}
