package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/pending"
)

// delivered is one request a receiver got.
type delivered struct {
	header http.Header
	body   []byte
}

func (d delivered) decode(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(d.body, &m); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, d.body)
	}
	return m
}

// receiver is a webhook on a local port that answers with status(n) for
// the n-th request (1-based) and hands every request to got.
type receiver struct {
	*httptest.Server
	got chan delivered
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	t.Helper()
	r := &receiver{got: make(chan delivered, 100)}
	var mu sync.Mutex
	n := 0
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		n++
		code := status(n)
		mu.Unlock()
		r.got <- delivered{header: req.Header.Clone(), body: body}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func always(code int) func(int) int { return func(int) int { return code } }

func (r *receiver) next(t *testing.T) delivered {
	t.Helper()
	select {
	case d := <-r.got:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver got nothing within 10s")
		return delivered{}
	}
}

// start starts a notifier and closes it when the test ends.
func start(t *testing.T, opts notify.Options) *notify.Notifier {
	t.Helper()
	n, err := notify.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.InfoLevel)
	return zap.New(core), logs
}

func question(id string) *pending.Question {
	created := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	return &pending.Question{
		ID: id, SessionID: "ses_1", Directory: "/srv/<app>", Owner: "builder", Client: "Claude Code",
		Message: "Deploy the secret plan?", CreatedAt: created, Deadline: created.Add(time.Hour),
		Questions: []elicit.QuestionInfo{
			{Question: "Deploy now?", Header: "Deploy", Options: []elicit.QuestionOption{{Label: "Yes"}, {Label: "No"}}},
			{Question: "Which region?", Header: "Region", Options: []elicit.QuestionOption{}},
		},
	}
}

func replied(q *pending.Question) *pending.Question {
	ended := *q
	ended.Ended = &pending.Outcome{
		Ending: pending.EndReplied, At: q.CreatedAt.Add(time.Minute),
		Result:  pending.Result{Action: pending.ActionAccept, Content: elicit.Content{"deploy": true, "region": "eu-north"}},
		Answers: [][]string{{"Yes"}, {"eu-north"}},
	}
	return &ended
}

// verifyWebhook is how a receiver checks a delivery, written from the
// description in docs/notifications.md alone: HMAC-SHA256 of "<timestamp>.<body>" with the
// secret, hex after "v1=", and a timestamp at most tolerance away.
func verifyWebhook(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) bool {
	ts, err := strconv.ParseInt(h.Get("X-Questiond-Timestamp"), 10, 64)
	if err != nil || now.Sub(time.Unix(ts, 0)).Abs() > tolerance {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(ts, 10) + "." + string(body)))
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(h.Get("X-Questiond-Signature")), []byte(want))
}
