package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/pending"
)

// Elicit whose create answer is lost, and whose question is withdrawn and
// forgotten before the retry arrives, returns an error matching
// ErrQuestionGone that names the question, and asks nothing again.
func TestElicitReturnsQuestionGone(t *testing.T) {
	asked := make(chan string, 1)
	d := startDaemon(t, daemonConfig{
		store: pending.Options{Retention: 20 * time.Millisecond},
		wrap: func(next http.Handler) http.Handler {
			first := true
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !(first && r.Method == http.MethodPost && r.URL.Path == "/elicitations") {
					next.ServeHTTP(w, r)
					return
				}
				first = false
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				var e struct{ ID string }
				if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.ID == "" {
					t.Errorf("create: %d %s", rec.Code, rec.Body)
					panic(http.ErrAbortHandler)
				}
				asked <- e.ID
				withdraw := httptest.NewRequest(http.MethodDelete, "/elicitations/"+e.ID, nil)
				withdraw.Host, withdraw.RemoteAddr = r.Host, r.RemoteAddr
				done := httptest.NewRecorder()
				if next.ServeHTTP(done, withdraw); done.Code != http.StatusOK {
					t.Errorf("withdraw: %d %s", done.Code, done.Body)
				}
				time.Sleep(100 * time.Millisecond) // past retention: the result is forgotten
				panic(http.ErrAbortHandler)        // and the create's answer is lost
			})
		},
	})
	c := newClient(t, d.URL, client.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := c.Elicit(ctx, deployForm(t))
	id := <-asked
	var qe *client.Error
	if !errors.Is(err, client.ErrQuestionGone) || !errors.As(err, &qe) || qe.Status != http.StatusGone ||
		qe.Name != "QuestionGoneError" || qe.RequestID != id || qe.Message == "" {
		t.Fatalf("Elicit after its question was forgotten: %v; want ErrQuestionGone naming %s", err, id)
	}
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrKeyReused) {
		t.Fatalf("%v matches another sentinel too", err)
	}
	if n := d.created.Load(); n != 1 {
		t.Fatalf("%d questions created, want 1: the retry asked again", n)
	}
}
