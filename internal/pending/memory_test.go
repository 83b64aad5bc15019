package pending_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

func TestCreateThenGet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := newStore(t, pending.Options{})
	custom := true
	q := ask("que_1", func(q *pending.Question) {
		q.Directory, q.Owner = "/work", "agent-1"
		q.Questions = []elicit.QuestionInfo{{Question: "Color?", Header: "Color", Options: []elicit.QuestionOption{{Label: "Red"}}, Custom: &custom}}
		q.Tool = &pending.Tool{MessageID: "msg_1", CallID: "call_1"}
	})
	before := time.Now()
	mustCreate(t, m, q)

	got, err := m.Get(ctx, "que_1")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.ID != "que_1" || got.SessionID != "ses_1" || got.Directory != "/work" || got.Owner != "agent-1" ||
		got.Message != "Pick one" || string(got.Schema) != `{"type":"object"}` || got.Tool.CallID != "call_1" ||
		len(got.Questions) != 1 || got.Questions[0].Options[0].Label != "Red" || !*got.Questions[0].Custom {
		t.Errorf("get returned %+v, want the created question", got)
	}
	if got.Ended != nil {
		t.Errorf("new question has Ended = %+v, want nil", got.Ended)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now()) {
		t.Errorf("CreatedAt = %v, want set to the time of Create", got.CreatedAt)
	}

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mustCreate(t, m, ask("que_2", func(q *pending.Question) { q.CreatedAt = at }))
	if got, _ := m.Get(ctx, "que_2"); !got.CreatedAt.Equal(at) {
		t.Errorf("CreatedAt = %v, want the given %v kept", got.CreatedAt, at)
	}
}

func TestCreateRejects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := newStore(t, pending.Options{})
	mustCreate(t, m, ask("que_pending"))
	mustCreate(t, m, ask("que_ended"))
	if _, err := m.Settle(ctx, "que_ended", replied("a")); err != nil {
		t.Fatalf("settle: %v", err)
	}
	tests := map[string]struct {
		q    *pending.Question
		want error
	}{
		"nil question":          {nil, pending.ErrInvalid},
		"empty id":              {ask(""), pending.ErrInvalid},
		"already ended":         {ask("que_new", func(q *pending.Question) { q.Ended = &pending.Outcome{Ending: pending.EndReplied} }), pending.ErrInvalid},
		"duplicate of pending":  {ask("que_pending"), pending.ErrExists},
		"duplicate of retained": {ask("que_ended"), pending.ErrExists},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if err := m.Create(ctx, tt.q); !errors.Is(err, tt.want) {
				t.Errorf("create: err = %v, want %v", err, tt.want)
			}
		})
	}
	if got, _ := m.Get(ctx, "que_pending"); got == nil || got.Ended != nil {
		t.Errorf("pending question after duplicate create = %+v, want it untouched", got)
	}
	if _, err := m.Get(ctx, "que_new"); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("rejected create stored a question: get err = %v", err)
	}
}

func TestCreateKeepsItsOwnCopy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := newStore(t, pending.Options{})
	custom := false
	q := ask("que_1", func(q *pending.Question) {
		q.Questions = []elicit.QuestionInfo{{Question: "Color?", Header: "Color", Options: []elicit.QuestionOption{{Label: "Red"}}, Custom: &custom}}
		q.Tool = &pending.Tool{CallID: "call_1"}
	})
	mustCreate(t, m, q)

	q.Message = "changed"
	q.Schema[0] = 'X'
	q.Questions[0].Header = "changed"
	q.Questions[0].Options[0].Label = "changed"
	*q.Questions[0].Custom = true
	q.Tool.CallID = "changed"
	q.Ended = &pending.Outcome{Ending: pending.EndReplied}

	got, err := m.Get(ctx, "que_1")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Message != "Pick one" || string(got.Schema) != `{"type":"object"}` || got.Questions[0].Header != "Color" ||
		got.Questions[0].Options[0].Label != "Red" || *got.Questions[0].Custom || got.Tool.CallID != "call_1" || got.Ended != nil {
		t.Errorf("stored question changed with the caller's struct: %+v", got)
	}
}

func TestListOrderAndFilters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := newStore(t, pending.Options{})
	late := time.Now().Add(time.Hour)
	// Insertion order is the order of record, whatever CreatedAt says.
	mustCreate(t, m, ask("que_a", func(q *pending.Question) { q.Directory, q.CreatedAt = "/x", late }))
	mustCreate(t, m, ask("que_b", func(q *pending.Question) { q.Directory, q.SessionID = "/y", "ses_2" }))
	mustCreate(t, m, ask("que_c", func(q *pending.Question) { q.Owner = "agent-1" }))
	mustCreate(t, m, ask("que_done", func(q *pending.Question) { q.Directory = "/x" }))
	mustCreate(t, m, ask("que_d", func(q *pending.Question) { q.Directory, q.Owner = "/x", "agent-1" }))
	if _, err := m.Settle(ctx, "que_done", cancelled(pending.EndWithdrawn)); err != nil {
		t.Fatalf("settle: %v", err)
	}

	tests := map[string]struct {
		filter pending.Filter
		want   []string
	}{
		"everything pending":          {pending.Filter{}, []string{"que_a", "que_b", "que_c", "que_d"}},
		"dir /x and dirless":          {pending.Filter{Directory: "/x"}, []string{"que_a", "que_c", "que_d"}},
		"dir /y and dirless":          {pending.Filter{Directory: "/y"}, []string{"que_b", "que_c"}},
		"unknown dir gets dirless":    {pending.Filter{Directory: "/z"}, []string{"que_c"}},
		"session":                     {pending.Filter{SessionID: "ses_2"}, []string{"que_b"}},
		"owner":                       {pending.Filter{Owner: "agent-1"}, []string{"que_c", "que_d"}},
		"owner and dir":               {pending.Filter{Owner: "agent-1", Directory: "/y"}, []string{"que_c"}},
		"nothing matches, empty list": {pending.Filter{SessionID: "ses_none"}, []string{}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := m.List(ctx, tt.filter)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if got == nil {
				t.Fatal("list returned nil, want an empty slice")
			}
			if !slices.Equal(ids(got), tt.want) {
				t.Errorf("list %+v = %v, want %v", tt.filter, ids(got), tt.want)
			}
		})
	}

	if got, _ := m.List(ctx, pending.Filter{}); got[0].Ended != nil {
		t.Errorf("listed question has Ended = %+v", got[0].Ended)
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	ctx, m, ends := recording(t)
	mustCreate(t, m, ask("que_1"))
	mustCreate(t, m, ask("que_2"))

	before := time.Now()
	got, err := m.Settle(ctx, "que_1", replied("Red"))
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	if got.Ended == nil || got.Ended.Ending != pending.EndReplied || got.Ended.Result.Action != pending.ActionAccept ||
		got.Ended.Result.Content["pick"] != "Red" || !slices.Equal(got.Ended.Answers[0], []string{"Red"}) {
		t.Errorf("settle returned %+v, want the reply", got.Ended)
	}
	if got.Ended.At.Before(before) || got.Ended.At.After(time.Now()) {
		t.Errorf("Outcome.At = %v, want set to the time of Settle", got.Ended.At)
	}
	if n := ends.count("que_1"); n != 1 {
		t.Errorf("OnEnd called %d times, want 1", n)
	}
	if r := ends.last("que_1"); r == nil || r.Ended == nil || r.Ended.Ending != pending.EndReplied {
		t.Errorf("OnEnd got %+v, want the ended copy", r)
	}

	if g, err := m.Get(ctx, "que_1"); err != nil || g.Ended == nil || g.Ended.Ending != pending.EndReplied {
		t.Errorf("get after settle = %+v, %v; want the ended question", g, err)
	}
	if w, err := m.Wait(ctx, "que_1"); err != nil || w.Ended == nil || w.Ended.Ending != pending.EndReplied {
		t.Errorf("wait after settle = %+v, %v; want the ended question at once", w, err)
	}
	if l, _ := m.List(ctx, pending.Filter{}); !slices.Equal(ids(l), []string{"que_2"}) {
		t.Errorf("list after settle = %v, want only que_2", ids(l))
	}

	for name, id := range map[string]string{"settled again": "que_1", "unknown id": "que_nope"} {
		if _, err := m.Settle(ctx, id, cancelled(pending.EndRejected)); !errors.Is(err, pending.ErrNotFound) {
			t.Errorf("%s: settle err = %v, want ErrNotFound", name, err)
		}
	}
	if n := ends.count("que_1"); n != 1 {
		t.Errorf("OnEnd called %d times after a losing settle, want 1", n)
	}

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := cancelled(pending.EndRejected)
	o.At = at
	if got, _ := m.Settle(ctx, "que_2", o); !got.Ended.At.Equal(at) {
		t.Errorf("Outcome.At = %v, want the given %v kept", got.Ended.At, at)
	}
}

func TestSettleKeepsItsOwnOutcome(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := newStore(t, pending.Options{})
	mustCreate(t, m, ask("que_1"))
	o := replied("Red")
	if _, err := m.Settle(ctx, "que_1", o); err != nil {
		t.Fatalf("settle: %v", err)
	}
	o.Answers[0][0] = "changed"
	o.Result.Content["pick"] = "changed"

	got, _ := m.Get(ctx, "que_1")
	if got.Ended.Answers[0][0] != "Red" || got.Ended.Result.Content["pick"] != "Red" {
		t.Errorf("stored outcome changed with the caller's: %+v", got.Ended)
	}
	// Copies handed out do not share the Outcome struct either.
	got.Ended.Ending = pending.EndTimeout
	if again, _ := m.Get(ctx, "que_1"); again.Ended.Ending != pending.EndReplied {
		t.Errorf("changing a handed-out copy changed the store: %+v", again.Ended)
	}
}

func TestSettleAll(t *testing.T) {
	t.Parallel()
	ctx, m, ends := recording(t)
	for _, id := range []string{"que_1", "que_2", "que_3", "que_4"} {
		mustCreate(t, m, ask(id))
	}
	if _, err := m.Settle(ctx, "que_2", replied("Red")); err != nil {
		t.Fatalf("settle: %v", err)
	}

	got, err := m.SettleAll(ctx, cancelled(pending.EndShutdown))
	if err != nil {
		t.Fatalf("settle all: %v", err)
	}
	if !slices.Equal(ids(got), []string{"que_1", "que_3", "que_4"}) {
		t.Errorf("settle all ended %v, want the pending ones oldest first", ids(got))
	}
	for _, id := range []string{"que_1", "que_3", "que_4"} {
		if n := ends.count(id); n != 1 {
			t.Errorf("OnEnd(%s) called %d times, want 1", id, n)
		}
		if q, _ := m.Get(ctx, id); q.Ended == nil || q.Ended.Ending != pending.EndShutdown || q.Ended.At.IsZero() {
			t.Errorf("%s after settle all: %+v, want ended by shutdown", id, q.Ended)
		}
	}
	if q, _ := m.Get(ctx, "que_2"); q.Ended.Ending != pending.EndReplied || ends.count("que_2") != 1 {
		t.Errorf("que_2 was already replied, settle all changed it: %+v", q.Ended)
	}
	if l, _ := m.List(ctx, pending.Filter{}); len(l) != 0 {
		t.Errorf("list after settle all = %v, want empty", ids(l))
	}
	if got, err := m.SettleAll(ctx, cancelled(pending.EndShutdown)); err != nil || len(got) != 0 {
		t.Errorf("second settle all = %v, %v; want nothing ended", ids(got), err)
	}
}

func TestUnknownQuestion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m := newStore(t, pending.Options{})
	if _, err := m.Get(ctx, "que_nope"); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("get: err = %v, want ErrNotFound", err)
	}
	if _, err := m.Wait(ctx, "que_nope"); !errors.Is(err, pending.ErrNotFound) {
		t.Errorf("wait: err = %v, want ErrNotFound", err)
	}
}

// OnEnd runs with no store lock held: calling back into the store from it,
// for the same question and with a write (Create), must not deadlock,
// whether the ending comes from Settle, a timer or SettleAll.
func TestOnEndMayCallTheStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var m *pending.Store
	seen := make(chan string, 16)
	m = newStore(t, pending.Options{OnEnd: func(q *pending.Question) {
		if g, err := m.Get(ctx, q.ID); err != nil || g.Ended == nil {
			t.Errorf("get %s from OnEnd = %+v, %v", q.ID, g, err)
		}
		if _, err := m.List(ctx, pending.Filter{}); err != nil {
			t.Errorf("list from OnEnd: %v", err)
		}
		if !strings.HasSuffix(q.ID, "_next") {
			if err := m.Create(ctx, ask(q.ID+"_next")); err != nil {
				t.Errorf("create from OnEnd: %v", err)
			}
		}
		seen <- q.ID
	}})
	mustCreate(t, m, ask("que_settle"))

	done := make(chan []string)
	go func() {
		var got []string
		if _, err := m.Settle(ctx, "que_settle", replied("a")); err != nil {
			t.Errorf("settle: %v", err)
		}
		got = append(got, <-seen)
		mustCreate(t, m, ask("que_timer", func(q *pending.Question) { q.Deadline = time.Now().Add(-time.Second) }))
		got = append(got, <-seen)
		all, err := m.SettleAll(ctx, cancelled(pending.EndShutdown))
		if err != nil {
			t.Errorf("settle all: %v", err)
		}
		for range all {
			got = append(got, <-seen)
		}
		done <- got
	}()
	// A deadlock would hang for ever; fail with a message instead.
	select {
	case got := <-done:
		want := []string{"que_settle", "que_timer", "que_settle_next", "que_timer_next"}
		if !slices.Equal(got, want) {
			t.Errorf("OnEnd saw %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("store deadlocked when OnEnd called back into it")
	}
}

func TestCountMatchesList(t *testing.T) {
	t.Parallel()
	m := pending.New(pending.Options{})
	defer m.Close(context.Background())
	ctx := context.Background()
	for i, owner := range []string{"a", "b", "a", ""} {
		q := &pending.Question{ID: fmt.Sprintf("que_count%d", i), SessionID: "ses_x", Owner: owner}
		if err := m.Create(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Settle(ctx, "que_count0", pending.Outcome{Ending: pending.EndWithdrawn, Result: pending.Result{Action: pending.ActionCancel}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []pending.Filter{{}, {Owner: "a"}, {Owner: "b"}, {Owner: "c"}} {
		n, err := m.Count(ctx, f)
		list, _ := m.List(ctx, f)
		if err != nil || n != len(list) {
			t.Errorf("Count(%+v) = %d, %v; List has %d", f, n, err, len(list))
		}
	}
}
