package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/metrics"
	"github.com/questiond/questiond/internal/pending"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, body)
	}
	return string(body)
}

func wantLine(t *testing.T, text, line string) {
	t.Helper()
	if !strings.Contains(text, "\n"+line+"\n") {
		t.Errorf("no line %q in the scrape", line)
	}
}

// An ending questiond does not know yet counts as "other", one series, so a
// new ending cannot grow the label set per question; the wait is measured
// from creation to the ending's time.
func TestEndingsAreBounded(t *testing.T) {
	m := metrics.New()
	created := time.Now().Add(-90 * time.Second)
	for i, e := range []pending.Ending{pending.EndTimeout, "brand-new-1", "brand-new-2"} {
		m.Ended(&pending.Question{ID: "que_" + string(rune('a'+i)), CreatedAt: created,
			Ended: &pending.Outcome{Ending: e, At: created.Add(90 * time.Second)}})
	}
	text := scrape(t, m)
	wantLine(t, text, `questiond_questions_ended_total{ending="timeout"} 1`)
	wantLine(t, text, `questiond_questions_ended_total{ending="other"} 2`)
	wantLine(t, text, `questiond_question_wait_seconds_bucket{ending="timeout",le="60"} 0`)
	wantLine(t, text, `questiond_question_wait_seconds_bucket{ending="timeout",le="120"} 1`)
	wantLine(t, text, `questiond_question_wait_seconds_sum{ending="timeout"} 90`)
	if strings.Contains(text, "brand-new") || strings.Contains(text, "que_") {
		t.Errorf("an ending or an id became a label:\n%s", text)
	}
}

// failingJournal fails every write and every ping.
type failingJournal struct{ pending.Journal }

var errDisk = errors.New("disk on fire")

func (failingJournal) Put(context.Context, ...*pending.Question) error { return errDisk }
func (failingJournal) Delete(context.Context, ...string) error         { return errDisk }
func (failingJournal) Ping(context.Context) error                      { return errDisk }

// The timed journal observes failed commits too, returns their errors as
// they are, and lets readiness reach the journal's Ping.
func TestJournalIsTimedAndStillPings(t *testing.T) {
	m := metrics.New()
	if text := scrape(t, m); strings.Contains(text, "questiond_store_commit_seconds") {
		t.Error("commit latency shown without a journal: a memory store commits nothing")
	}
	j := m.Journal(failingJournal{})
	if err := j.Put(context.Background(), &pending.Question{ID: "que_x"}); !errors.Is(err, errDisk) {
		t.Fatalf("Put: %v", err)
	}
	if err := j.Delete(context.Background(), "que_x"); !errors.Is(err, errDisk) {
		t.Fatalf("Delete: %v", err)
	}
	if err := j.(pending.Pinger).Ping(context.Background()); !errors.Is(err, errDisk) {
		t.Fatalf("Ping: %v, want the journal's", err)
	}
	text := scrape(t, m)
	wantLine(t, text, `questiond_store_commit_seconds_count{op="put"} 1`)
	wantLine(t, text, `questiond_store_commit_seconds_count{op="delete"} 1`)
}

// Requests with the same labels share one series; each combination is one.
func TestRequestSeries(t *testing.T) {
	m := metrics.New("rate", "streams", "mcp_streams", "mcp_streams_per_agent", "mcp_sessions", "mcp_sessions_per_agent")
	for range 3 {
		m.Request("GET", "/question", 200)
	}
	m.Request("GET", "/question", 401)
	m.Refused("rate")
	m.ToolCall("ask_user_question", "decline")
	text := scrape(t, m)
	wantLine(t, text, `questiond_http_requests_total{method="GET",route="/question",status="200"} 3`)
	wantLine(t, text, `questiond_http_requests_total{method="GET",route="/question",status="401"} 1`)
	wantLine(t, text, `questiond_limit_refusals_total{limit="rate"} 1`)
	wantLine(t, text, `questiond_limit_refusals_total{limit="streams"} 0`)
	for _, limit := range []string{"mcp_streams", "mcp_streams_per_agent", "mcp_sessions", "mcp_sessions_per_agent"} {
		wantLine(t, text, `questiond_limit_refusals_total{limit="`+limit+`"} 0`)
	}
	wantLine(t, text, `questiond_mcp_tool_calls_total{result="decline",tool="ask_user_question"} 1`)
}

func BenchmarkRequest(b *testing.B) {
	m := metrics.New()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request("GET", "/question", 200)
		}
	})
}
