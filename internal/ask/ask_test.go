package ask_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
)

const form = `{"type":"object","properties":{"a":{"type":"string"}}}`

// request is a valid question from owner, keyed with key when it is not "".
func request(owner, key string) ask.Request {
	return ask.Request{Owner: owner, Message: "Which?", Schema: []byte(form), Timeout: time.Hour, Key: key, Fingerprint: "fp-" + key}
}

// A question is announced once it is stored; a keyed retry gets the same
// question, announced once, and a retry that asks something else with the
// key is refused.
func TestAskAnnouncesOnceAndReplaysKeys(t *testing.T) {
	store := pending.New(pending.Options{})
	defer store.Close(t.Context())
	s, announced := newRecordedService(t, store, ask.Options{})
	q, replayed, err := s.Ask(t.Context(), request("alpha", "k1"))
	if err != nil || replayed {
		t.Fatalf("ask: %v (replayed %v)", err, replayed)
	}
	if got, want := announced.list(), []string{"asked " + q.ID}; !slices.Equal(got, want) {
		t.Fatalf("announced %q, want %q", got, want)
	}
	if stored, err := store.Get(t.Context(), q.ID); err != nil || stored.Owner != "alpha" || stored.SessionID != ask.Inbox("alpha") {
		t.Fatalf("stored %+v, %v; want alpha's question in alpha's inbox", stored, err)
	}

	again, replayed, err := s.Ask(t.Context(), request("alpha", "k1"))
	if err != nil || !replayed || again.ID != q.ID {
		t.Fatalf("retry: %+v, replayed %v, %v; want %s replayed", again, replayed, err, q.ID)
	}
	if n := len(announced.list()); n != 1 {
		t.Fatalf("the retry announced again: %q", announced.list())
	}
	other := request("alpha", "k1")
	other.Fingerprint = "something else"
	if _, _, err := s.Ask(t.Context(), other); !errors.Is(err, ask.ErrKeyReused) || !ask.IsKeyError(err) {
		t.Fatalf("another request with the key: %v, want ErrKeyReused", err)
	}
	// Keys are per agent: bravo's k1 is a new question.
	if b, replayed, err := s.Ask(t.Context(), request("bravo", "k1")); err != nil || replayed || b.ID == q.ID {
		t.Fatalf("bravo's k1: %+v, replayed %v, %v; want a question of its own", b, replayed, err)
	}
}

// A second request with a key whose first is still being created is
// refused with ErrKeyInFlight, not asked twice.
func TestAskRefusesAKeyInFlight(t *testing.T) {
	store := pending.New(pending.Options{})
	defer store.Close(t.Context())
	s := newService(t, store, ask.Options{})
	claimed, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.SetTestHooks(ask.TestHooks{KeyClaimed: func(string) {
		once.Do(func() { close(claimed); <-proceed })
	}})
	first := make(chan error, 1)
	go func() { _, _, err := s.Ask(context.Background(), request("alpha", "k1")); first <- err }()
	<-claimed
	if _, _, err := s.Ask(t.Context(), request("alpha", "k1")); !errors.Is(err, ask.ErrKeyInFlight) {
		t.Errorf("the rival: %v, want ErrKeyInFlight", err)
	}
	close(proceed)
	if err := <-first; err != nil {
		t.Fatalf("the first: %v", err)
	}
	if n, _ := store.Count(t.Context(), pending.Filter{}); n != 1 {
		t.Fatalf("%d pending, want 1", n)
	}
}

// The limits on pending questions count per agent and in total, and each
// refusal names its limit to OnRefused and in the LimitError.
func TestAskLimits(t *testing.T) {
	store := pending.New(pending.Options{})
	defer store.Close(t.Context())
	var refused []string
	s := newService(t, store, ask.Options{MaxPending: 3, MaxPendingPerAgent: 2, Agents: []string{"alpha", "bravo"},
		OnRefused: func(limit string) { refused = append(refused, limit) }})
	for _, owner := range []string{"alpha", "alpha"} {
		if _, _, err := s.Ask(t.Context(), request(owner, "")); err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
	}
	var limit *ask.LimitError
	if _, _, err := s.Ask(t.Context(), request("alpha", "")); !errors.As(err, &limit) || limit.Limit != ask.LimitPendingPerAgent {
		t.Fatalf("alpha's third: %v, want the per-agent LimitError", err)
	}
	if _, _, err := s.Ask(t.Context(), request("bravo", "")); err != nil {
		t.Fatalf("bravo's first: %v", err)
	}
	if _, _, err := s.Ask(t.Context(), request("bravo", "")); !errors.As(err, &limit) || limit.Limit != ask.LimitPending {
		t.Fatalf("the fourth in all: %v, want the total's LimitError", err)
	}
	if want := []string{ask.LimitPendingPerAgent, ask.LimitPending}; !slices.Equal(refused, want) {
		t.Fatalf("refused %q, want %q", refused, want)
	}
}

// Only an agent asks in its inbox, and an inbox is nobody's parent.
func TestAskKeepsInboxesTheirAgents(t *testing.T) {
	store := pending.New(pending.Options{})
	defer store.Close(t.Context())
	s := newService(t, store, ask.Options{Agents: []string{"alpha", "bravo"}})
	r := request("bravo", "")
	r.SessionID = ask.Inbox("alpha")
	var refused *ask.ForbiddenError
	if _, _, err := s.Ask(t.Context(), r); !errors.As(err, &refused) {
		t.Fatalf("bravo in alpha's inbox: %v, want a ForbiddenError", err)
	}
	if owner, ok := s.InboxOwner(ask.Inbox("alpha")); !ok || owner != "alpha" {
		t.Fatalf("InboxOwner = %q, %v", owner, ok)
	}
	if n, _ := store.Count(t.Context(), pending.Filter{}); n != 0 {
		t.Fatalf("%d questions stored after the refusal", n)
	}
}

// A shutdown's doors: Drain refuses new questions; Release lets every wait
// go, waits for calls to withdraw their questions and for endings under
// way, runs the hooks at their stages, and then refuses endings.
func TestDrainAndRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := pending.New(pending.Options{})
		defer store.Close(context.Background())
		s := newService(t, store, ask.Options{})
		waited, _, err := s.Ask(t.Context(), request("", ""))
		if err != nil {
			t.Fatal(err)
		}
		called, _, err := s.Ask(t.Context(), request("", ""))
		if err != nil {
			t.Fatal(err)
		}
		var stages []string
		s.OnRelease(ask.AfterEndings, func(context.Context) { stages = append(stages, "endings") })
		s.OnRelease(ask.AfterCalls, func(context.Context) { stages = append(stages, "calls") })

		waitErr := make(chan error, 1)
		go func() { _, err := s.Wait(context.Background(), waited.ID); waitErr <- err }()
		leave, ok := s.EnterCall()
		if !ok {
			t.Fatal("EnterCall refused before Release")
		}
		callDone := make(chan struct{})
		go func() { // a tool call: withdraws its question once released
			defer close(callDone)
			defer leave()
			if _, err := s.Wait(context.Background(), called.ID); err == nil || !s.Released() {
				t.Errorf("the call's wait: %v (released %v); want it let go by Release", err, s.Released())
			}
			if _, err := s.Withdraw(called.ID, pending.EndShutdown); err != nil {
				t.Errorf("withdraw: %v", err)
			}
		}()
		synctest.Wait()

		s.Drain()
		if _, _, err := s.Ask(t.Context(), request("", "")); !errors.Is(err, ask.ErrShuttingDown) {
			t.Fatalf("ask after Drain: %v, want ErrShuttingDown", err)
		}
		if err := s.Release(t.Context()); err != nil {
			t.Fatalf("release: %v", err)
		}
		<-callDone
		if err := <-waitErr; err == nil {
			t.Fatal("a wait outlived Release")
		}
		if got := fmt.Sprint(stages); got != "[calls endings]" {
			t.Fatalf("hooks ran as %s, want calls then endings", got)
		}
		if q, _ := store.Get(t.Context(), called.ID); q.Ended == nil || q.Ended.Ending != pending.EndShutdown {
			t.Fatalf("the call's question %+v, want it withdrawn at shutdown", q.Ended)
		}
		if q, _ := store.Get(t.Context(), waited.ID); q.Ended != nil {
			t.Fatalf("the waited question ended (%+v); Release ends no question an agent can collect", q.Ended)
		}
		if err := s.Reject(t.Context(), waited.ID, pending.ActionCancel); !errors.Is(err, ask.ErrShuttingDown) {
			t.Fatalf("an ending after Release: %v, want ErrShuttingDown", err)
		}
		if _, ok := s.EnterCall(); ok {
			t.Fatal("EnterCall admitted a call after Release")
		}
	})
}

// parkedListener parks in Asked until proceed is closed.
type parkedListener struct {
	heard
	inAsked, proceed chan struct{}
}

func (p *parkedListener) Asked(q *pending.Question) {
	close(p.inAsked)
	<-p.proceed
	p.heard.Asked(q)
}

// A question that ends while it is still being announced (a fast operator,
// a deadline) is told ended only once every listener has heard it asked.
func TestAnEndingWaitsForItsAnnouncement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		listener := &parkedListener{inAsked: make(chan struct{}), proceed: make(chan struct{})}
		announce := ask.NewAnnouncements(nil, listener)
		store := pending.New(pending.Options{OnEnd: announce.Ended})
		defer store.Close(context.Background())
		s := newServiceWith(t, store, announce, ask.Options{})
		asked := make(chan *pending.Question, 1)
		go func() {
			q, _, err := s.Ask(context.Background(), request("", ""))
			if err != nil {
				t.Errorf("ask: %v", err)
			}
			asked <- q
		}()
		<-listener.inAsked
		pendingNow, err := store.List(t.Context(), pending.Filter{})
		if err != nil || len(pendingNow) != 1 {
			t.Fatalf("pending %v, %v; want the question stored before it is announced", pendingNow, err)
		}
		id := pendingNow[0].ID
		ended := make(chan error, 1)
		go func() { ended <- s.Reject(context.Background(), id, pending.ActionDecline) }()
		synctest.Wait()
		if got := listener.list(); len(got) != 0 {
			t.Fatalf("heard %q while the announcement is parked; want nothing yet", got)
		}
		close(listener.proceed)
		if err := <-ended; err != nil {
			t.Fatalf("reject: %v", err)
		}
		<-asked
		if got, want := listener.list(), []string{"asked " + id, "ended " + id}; !slices.Equal(got, want) {
			t.Fatalf("heard %q, want %q", got, want)
		}
	})
}
