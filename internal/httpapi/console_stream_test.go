package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"
)

// tuiUserAgent is what the OpenCode TUI 1.18.33 sends.
const tuiUserAgent = "opencode/1.18.33"

// consoleStream opens /global/event the way the OpenCode TUI does.
func (c *console) consoleStream() *stream {
	c.t.Helper()
	s := c.h.openStream("/global/event", "User-Agent", tuiUserAgent, "Authorization", basicAuth("opencode", operatorPassword))
	s.expect(c.t, "server.connected")
	return s
}

// standardStream opens /global/event as any other client does.
func (c *console) standardStream() *stream {
	c.t.Helper()
	s := c.h.openStream("/global/event", "User-Agent", "opencode-sdk-js/1.19.3", "Authorization", basicAuth("opencode", operatorPassword))
	s.expect(c.t, "server.connected")
	return s
}

func (c *console) reply(id string, answers [][]string) {
	c.t.Helper()
	if res := c.operator(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": answers}); res.Status != http.StatusOK {
		c.t.Fatalf("reply %s: %d %s", id, res.Status, res.Body)
	}
}

// until reads s until an event of type typ about id (a requestID, or a
// sessionID) arrives, and returns it with the types seen on the way.
func until(t *testing.T, s *stream, typ, id string) (frame, []string) {
	t.Helper()
	var seen []string
	for {
		f := s.next(t)
		if strings.Contains(f.Raw, `"workspace"`) {
			t.Fatalf("%s carries a workspace field, which makes the TUI ignore it: %s", f.Type, f.Raw)
		}
		if f.Type == typ && (id == "" || strings.Contains(string(f.Properties), `"`+id+`"`)) {
			return f, seen
		}
		seen = append(seen, f.Type+" "+eventSubject(f))
	}
}

// eventSubject is the question or session an event is about.
func eventSubject(f frame) string {
	var p struct {
		ID        string `json:"id"`
		RequestID string `json:"requestID"`
		SessionID string `json:"sessionID"`
	}
	_ = json.Unmarshal(f.Properties, &p)
	switch {
	case p.RequestID != "":
		return p.RequestID
	case strings.HasPrefix(p.ID, "que_"):
		return p.ID
	}
	return p.SessionID
}

// The TUI gets one question of a session at a time, oldest first, the next
// one a moment after the previous ended; every other client gets both at once.
func TestConsoleShowsOneQuestionPerSession(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	tui := c.consoleStream()
	sdk := c.standardStream()

	first := c.ask(alphaToken, map[string]any{"sessionID": "ses_one"})
	second := c.ask(alphaToken, map[string]any{"sessionID": "ses_one"})

	for _, id := range []string{first, second} {
		if f, _ := until(t, sdk, "question.asked", id); eventSubject(f) != id {
			t.Fatalf("sdk stream: %s", f.Raw)
		}
	}
	until(t, tui, "question.asked", first)
	_, seen := until(t, tui, "tui.toast.show", "")
	_, seen2 := until(t, tui, "tui.toast.show", "") // the second question's toast
	for _, s := range append(seen, seen2...) {
		if s == "question.asked "+second {
			t.Fatalf("the console was shown the second question while the first is pending: %v", append(seen, seen2...))
		}
	}

	answeredAt := time.Now()
	c.reply(first, [][]string{{"SY215C"}, {"Low power"}})
	_, seen = until(t, tui, "question.replied", first)
	for _, s := range seen {
		if s == "question.asked "+second {
			t.Fatalf("the second question came before the first one's ending: %v", seen)
		}
	}
	until(t, tui, "question.asked", second)
	if gap := time.Since(answeredAt); gap < 200*time.Millisecond {
		t.Errorf("the next question came %v after the answer; the TUI needs it in a later batch", gap)
	}

	// A new TUI stream is shown the session's current question only.
	late := c.consoleStream()
	late.expect(t, "question.replied") // the first one's ending, see TestConsoleReplayTellsRecentEndings
	if f := late.next(t); f.Type != "question.asked" || eventSubject(f) != second {
		t.Fatalf("a new console stream's first question: %s", f.Raw)
	}
}

// After the last question of a session ends the TUI is told the session is
// idle again, its history message completed and its title unmarked.
func TestConsoleSessionGoesIdle(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	tui := c.consoleStream()
	id := c.ask(alphaToken, map[string]any{"sessionID": "ses_idle"})
	until(t, tui, "question.asked", id)
	f, _ := until(t, tui, "session.status", "ses_idle")
	if !strings.Contains(string(f.Properties), `"busy"`) {
		t.Fatalf("while pending: %s", f.Raw)
	}

	c.reply(id, [][]string{{"SY215C"}, {"Low power"}})
	until(t, tui, "question.replied", id)
	msg, _ := until(t, tui, "message.updated", "ses_idle")
	var m struct {
		Info struct {
			Time struct {
				Completed *int64 `json:"completed"`
			} `json:"time"`
		} `json:"info"`
	}
	if json.Unmarshal(msg.Properties, &m); m.Info.Time.Completed == nil {
		t.Errorf("history message not completed after the answer: %s", msg.Raw)
	}
	part, _ := until(t, tui, "message.part.updated", "ses_idle")
	for !strings.Contains(string(part.Properties), `"tool"`) {
		part, _ = until(t, tui, "message.part.updated", "ses_idle")
	}
	if !strings.Contains(string(part.Properties), `"status":"completed"`) || !strings.Contains(string(part.Properties), `"SY215C"`) {
		t.Errorf("tool part after the answer: %s", part.Raw)
	}
	updated, _ := until(t, tui, "session.updated", "ses_idle")
	if strings.Contains(string(updated.Properties), `[?]`) {
		t.Errorf("title still marked pending: %s", updated.Raw)
	}
	status, _ := until(t, tui, "session.status", "ses_idle")
	if !strings.Contains(string(status.Properties), `"idle"`) {
		t.Fatalf("after the answer: %s", status.Raw)
	}
	until(t, tui, "session.idle", "ses_idle")
}

// Clients other than the TUI see none of the console's extra events.
func TestConsoleEventsStayOffOtherStreams(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	sdk := c.standardStream()
	id := c.ask(alphaToken, map[string]any{"sessionID": "ses_quiet"})
	c.reply(id, [][]string{{"SY215C"}, {"Low power"}})
	marker := c.ask(alphaToken, map[string]any{"sessionID": "ses_other"})
	var types []string
	for {
		f := sdk.next(t)
		types = append(types, f.Type)
		if f.Type == "question.asked" && eventSubject(f) == marker {
			break
		}
	}
	if want := []string{"question.asked", "question.replied", "question.asked"}; strings.Join(types, ",") != strings.Join(want, ",") {
		t.Fatalf("a standard stream got %v, want %v", types, want)
	}
}

// With ConsoleFollow, answering a session's last question moves the TUI to
// the session of the oldest question still pending.
func TestConsoleFollowSelectsTheNextSession(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{api: httpapi.Options{ConsoleFollow: true}})
	tui := c.consoleStream()
	a := c.ask(alphaToken, map[string]any{"sessionID": "ses_a"})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_b"})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_c"})
	c.reply(a, [][]string{{"SY215C"}, {"Low power"}})
	f, _ := until(t, tui, "tui.session.select", "")
	if eventSubject(f) != "ses_b" {
		t.Fatalf("selected %s, want ses_b: %s", eventSubject(f), f.Raw)
	}
}

// Without it the TUI stays where the operator is.
func TestConsoleStaysWithoutFollow(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	tui := c.consoleStream()
	a := c.ask(alphaToken, map[string]any{"sessionID": "ses_a"})
	c.ask(alphaToken, map[string]any{"sessionID": "ses_b"})
	c.reply(a, [][]string{{"SY215C"}, {"Low power"}})
	until(t, tui, "session.idle", "ses_a")
	time.Sleep(400 * time.Millisecond) // longer than the console's delay before a select
	marker := c.ask(alphaToken, map[string]any{"sessionID": "ses_marker"})
	_, seen := until(t, tui, "question.asked", marker)
	for _, s := range seen {
		if strings.HasPrefix(s, "tui.session.select") {
			t.Fatalf("the console was moved without --console-follow: %v", seen)
		}
	}
}

// Questions of one session asked and answered concurrently never show the
// console two at a time, nor a question after its ending, and every one of
// them is shown before it ends or not at all.
func TestConsoleOrderUnderConcurrency(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	tui := c.consoleStream()
	const n = 12
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids <- c.ask(alphaToken, map[string]any{"sessionID": "ses_busy"})
		}()
	}
	// Answer every question as soon as it exists, racing the next asks.
	go func() { wg.Wait(); close(ids) }()
	for id := range ids {
		go func() {
			res := c.operator(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"SY215C"}, {}}})
			if res.Status != http.StatusOK {
				t.Errorf("reply %s: %d %s", id, res.Status, res.Body)
			}
		}()
	}
	shown, ended := "", map[string]bool{}
	for len(ended) < n {
		f := tui.next(t)
		id := eventSubject(f)
		switch f.Type {
		case "question.asked":
			if shown != "" {
				t.Fatalf("%s shown while %s is still shown", id, shown)
			}
			if ended[id] {
				t.Fatalf("%s shown after it ended", id)
			}
			shown = id
		case "question.replied":
			ended[id] = true
			if shown == id {
				shown = ""
			}
		}
	}
}

// A TUI that connects (again) is told how questions ended lately, so a panel
// it kept across a restart or a dropped connection closes; other clients are
// not.
func TestConsoleReplayTellsRecentEndings(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	replied := c.ask(alphaToken, map[string]any{"sessionID": "ses_r"})
	c.reply(replied, [][]string{{"SY215C"}, {}})
	withdrawn := c.ask(alphaToken, map[string]any{"sessionID": "ses_r"})
	if res := c.h.do(http.MethodDelete, "/elicitations/"+withdrawn, nil, "Authorization", bearerAuth(alphaToken)); res.Status != http.StatusOK {
		t.Fatalf("withdraw: %d %s", res.Status, res.Body)
	}
	waiting := c.ask(alphaToken, map[string]any{"sessionID": "ses_w"})

	tui := c.consoleStream()
	for _, want := range []string{"question.replied " + replied, "question.rejected " + withdrawn, "question.asked " + waiting} {
		if f := tui.next(t); f.Type+" "+eventSubject(f) != want {
			t.Fatalf("console replay: got %s, want %s", f.Raw, want)
		}
	}
	sdk := c.standardStream()
	if f := sdk.next(t); f.Type != "question.asked" || eventSubject(f) != waiting {
		t.Fatalf("standard replay: got %s, want only the pending question", f.Raw)
	}
}

// A question asked just after the session's shown one ended waits its turn:
// the TUI is shown the older waiting question first, and only once the
// ending's render batch is past (issue 22, item 9).
func TestConsoleNewQuestionWaitsBehindTheDelay(t *testing.T) {
	t.Parallel()
	c := newConsole(t, tuning{})
	tui := c.consoleStream()
	first := c.ask(alphaToken, map[string]any{"sessionID": "ses_delay"})
	second := c.ask(alphaToken, map[string]any{"sessionID": "ses_delay"})
	until(t, tui, "question.asked", first)

	endedBy := time.Now() // the ending comes after this instant
	c.reply(first, [][]string{{"SY215C"}, {}})
	third := c.ask(alphaToken, map[string]any{"sessionID": "ses_delay"})

	_, seen := until(t, tui, "question.replied", first)
	for _, s := range seen {
		if strings.HasPrefix(s, "question.asked ") {
			t.Fatalf("%s came before the first question's ending: %v", s, seen)
		}
	}
	f, _ := until(t, tui, "question.asked", "")
	if id := eventSubject(f); id != second {
		t.Fatalf("after the first question ended the TUI was shown %s; want the older %s (the new one is %s)", id, second, third)
	}
	if gap := time.Since(endedBy); gap < 200*time.Millisecond {
		t.Errorf("the next question came %v after the ending; the TUI needs it in a later batch", gap)
	}
	c.reply(second, [][]string{{"SY215C"}, {}})
	if f, _ := until(t, tui, "question.asked", ""); eventSubject(f) != third {
		t.Fatalf("after the second question the TUI was shown %s; want %s", eventSubject(f), third)
	}
}
