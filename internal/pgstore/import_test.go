package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// Import copies pending and ended questions and session records; a
// running replica announces the pending ones; a second run copies nothing.
func TestImport(t *testing.T) {
	url := database(t)
	a := newReplica(t, url, pending.Options{})
	db := open(t, url)
	ctx := context.Background()
	ended := question("old")
	o := reply("x")
	o.At = time.Now()
	ended.Ended = &o
	qs := []*pending.Question{question("p1"), question("p2"), ended}
	sessions := map[string][]byte{"ses_a": []byte(`{"id":"ses_a","questionCapability":"none"}`)}
	n, err := db.Import(ctx, qs, sessions)
	if err != nil || n.Questions != 3 || n.Sessions != 1 || n.QuestionsSkipped != 0 {
		t.Fatalf("import: %+v, %v", n, err)
	}
	for _, id := range []string{"p1", "p2"} {
		if got := a.observed.next(t); got.ID != id || got.Ended != nil {
			t.Fatalf("the running replica observed %s (ended %v); want %s asked", got.ID, got.Ended != nil, id)
		}
	}
	a.observed.none(t, "the ended question")
	n, err = db.Import(ctx, qs, sessions)
	if err != nil || n.Questions != 0 || n.QuestionsSkipped != 3 || n.Sessions != 0 || n.SessionsSkipped != 1 {
		t.Fatalf("second import: %+v, %v; want everything skipped", n, err)
	}
	late := newReplica(t, url, pending.Options{})
	if got, err := late.store.Get(ctx, "old"); err != nil || got.Ended == nil || got.Ended.Result.Content["pick"] != "x" {
		t.Fatalf("a replica started after the import reads the ended question as %+v, %v", got, err)
	}
	s, err := db.Sessions(session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "ses_a"); err != nil || got.Capability != session.None {
		t.Fatalf("imported session: %+v, %v", got, err)
	}
}
