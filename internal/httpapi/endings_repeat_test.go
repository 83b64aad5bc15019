package httpapi_test

// A reply or reject for a question that has already ended is the usual 404,
// and publishes the question's ending again on the OpenCode TUI's streams, so
// a TUI that missed it (attached across a restart) stops showing the
// question. Other clients hear of an ending once.

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testserver"
)

// wantQuestionNotFound checks the 404 of a reply or reject: exactly the body
// of an unknown id (OpenCode's golden QuestionNotFoundError), naming id.
func wantQuestionNotFound(t *testing.T, what string, res response, id string) {
	t.Helper()
	want := `{"_tag":"QuestionNotFoundError","requestID":"` + id + `","message":"Question request not found: ` + id + `"}`
	if res.Status != http.StatusNotFound || strings.TrimSpace(string(res.Body)) != want {
		t.Errorf("%s: %d %s, want 404 %s", what, res.Status, res.Body, want)
	}
}

// endingOf reads a question.replied or question.rejected frame.
type endingOf struct {
	SessionID string     `json:"sessionID"`
	RequestID string     `json:"requestID"`
	Answers   [][]string `json:"answers"`
}

// expectQuestionEvent skips the console's other events (history, status,
// toasts) and checks the next question.* event's type.
func expectQuestionEvent(t *testing.T, events *stream, typ string) frame {
	t.Helper()
	for {
		f := events.next(t)
		if !strings.HasPrefix(f.Type, "question.") {
			continue
		}
		if f.Type != typ {
			t.Fatalf("got event %s (%s), want %s", f.Type, f.Raw, typ)
		}
		return f
	}
}

func wantEndingEvent(t *testing.T, events *stream, typ, sessionID, id string) endingOf {
	t.Helper()
	f := expectQuestionEvent(t, events, typ)
	var e endingOf
	if err := json.Unmarshal(f.Properties, &e); err != nil || e.SessionID != sessionID || e.RequestID != id {
		t.Fatalf("%s %s, want for %s in %s", typ, f.Raw, id, sessionID)
	}
	return e
}

var answersForSeed = map[string]any{"answers": [][]string{{"SY215C"}, {"Black smoke"}}}

func TestReplyToAnEndedQuestionPublishesItsEndingAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	events := h.openStream("/event", "User-Agent", tuiUserAgent)
	events.expect(t, "server.connected")
	others := h.openStream("/event")
	others.expect(t, "server.connected")
	unknown := "que_00000000000000000000000000"
	wantQuestionNotFound(t, "reply to an unknown id", h.do(http.MethodPost, "/question/"+unknown+"/reply", answersForSeed), unknown)

	// Withdrawn by its agent: the operator's reply and reject are 404s,
	// and each publishes question.rejected again.
	form := seedForm()
	form["sessionID"] = "ses_repeat"
	withdrawn := h.create(form).ID
	expectQuestionEvent(t, events, "question.asked") // not the unknown id's: it published nothing
	h.do(http.MethodDelete, "/elicitations/"+withdrawn, nil)
	wantEndingEvent(t, events, "question.rejected", "ses_repeat", withdrawn)
	wantQuestionNotFound(t, "reply to a withdrawn question", h.do(http.MethodPost, "/question/"+withdrawn+"/reply", answersForSeed), withdrawn)
	wantEndingEvent(t, events, "question.rejected", "ses_repeat", withdrawn)
	wantQuestionNotFound(t, "reject of a withdrawn question", h.do(http.MethodPost, "/question/"+withdrawn+"/reject", nil), withdrawn)
	wantEndingEvent(t, events, "question.rejected", "ses_repeat", withdrawn)

	// Answered: a second reply is a 404 and repeats question.replied with
	// the answers that stand.
	answered := h.create(form).ID
	expectQuestionEvent(t, events, "question.asked")
	if res := h.do(http.MethodPost, "/question/"+answered+"/reply", answersForSeed); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	first := wantEndingEvent(t, events, "question.replied", "ses_repeat", answered)
	late := map[string]any{"answers": [][]string{{"SY365H"}, {}}}
	wantQuestionNotFound(t, "a second reply", h.do(http.MethodPost, "/question/"+answered+"/reply", late), answered)
	if again := wantEndingEvent(t, events, "question.replied", "ses_repeat", answered); !slices.EqualFunc(again.Answers, first.Answers, slices.Equal) {
		t.Errorf("repeated answers %v, want the first reply's %v", again.Answers, first.Answers)
	}
	var view created
	h.do(http.MethodGet, "/elicitations/"+answered, nil).json(t, &view)
	if view.Result == nil || view.Result.Content["model"] != "SY215C" {
		t.Errorf("the late reply changed the result: %+v", view.Result)
	}

	// A bad body is still a 400 before any lookup, and publishes nothing.
	res := h.do(http.MethodPost, "/question/"+answered+"/reply", `{"answers":"no"}`)
	wantStatusError(t, "a bad reply body for an ended question", res, http.StatusBadRequest, "BadRequest")
	next := h.create(form).ID
	if got := askedID(t, expectQuestionEvent(t, events, "question.asked")); got != next {
		t.Errorf("next event is for %s, want the new question %s", got, next)
	}

	// Every other client heard of each ending once.
	var seen []string
	for _, want := range []string{"question.asked", "question.rejected", "question.asked", "question.replied", "question.asked"} {
		f := others.next(t)
		seen = append(seen, f.Type)
		if f.Type != want {
			t.Fatalf("a standard stream got %v, want asked, rejected, asked, replied, asked", seen)
		}
	}
}

// With the durable store, a question that ended before a restart is still
// known afterwards, so the TUI's reply for it closes its panel.
func TestReplyAfterARestartClosesTheEndedQuestion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "questiond.db")
	start := func() (*harness, *testserver.Server) {
		srv, err := testserver.Start(testserver.Config{
			BoltPath: path, Bolt: pending.BoltOptions{NoSync: true},
			Events: sse.Options{Heartbeat: time.Hour}, Logger: zaptest.NewLogger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Stop() })
		return &harness{t: t, URL: srv.URL}, srv
	}
	before, srv := start()
	form := seedForm()
	form["sessionID"] = "ses_restart"
	id := before.create(form).ID
	before.do(http.MethodDelete, "/elicitations/"+id, nil)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	after, _ := start()
	events := after.openStream("/global/event", "User-Agent", tuiUserAgent)
	events.expect(t, "server.connected")
	// The TUI reconnecting is told at once (see TestConsoleReplayTellsRecentEndings),
	wantEndingEvent(t, events, "question.rejected", "ses_restart", id)
	// and again when its operator answers the panel anyway.
	wantQuestionNotFound(t, "the TUI's reply after the restart", after.do(http.MethodPost, "/question/"+id+"/reply", answersForSeed), id)
	wantEndingEvent(t, events, "question.rejected", "ses_restart", id)
}
