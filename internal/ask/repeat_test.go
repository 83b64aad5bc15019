package ask_test

import (
	"slices"
	"testing"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
)

// repeater is a listener that also repeats endings.
type repeater struct{ heard }

func (r *repeater) RepeatEnding(q *pending.Question) { r.note("repeated", q.ID) }

// RepeatEnding tells the listeners that repeat endings, and only those, how
// an ended question ended, again; a pending question is not told.
func TestRepeatEndingTellsOnlyRepeatersOfEndedQuestions(t *testing.T) {
	t.Parallel()
	plain, rep := &heard{}, &repeater{}
	announce := ask.NewAnnouncements(nil, plain, rep)
	store := pending.New(pending.Options{OnEnd: announce.Ended})
	defer store.Close(t.Context())
	s := newServiceWith(t, store, announce, ask.Options{})
	q, _, err := s.Ask(t.Context(), request("alpha", ""))
	if err != nil {
		t.Fatal(err)
	}
	s.RepeatEnding(q) // still pending: nothing to repeat
	if err := s.Reject(t.Context(), q.ID, pending.ActionCancel); err != nil {
		t.Fatal(err)
	}
	ended, err := store.Get(t.Context(), q.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.RepeatEnding(ended)
	if got, want := rep.list(), []string{"asked " + q.ID, "ended " + q.ID, "repeated " + q.ID}; !slices.Equal(got, want) {
		t.Errorf("the repeater heard %q, want %q", got, want)
	}
	if got, want := plain.list(), []string{"asked " + q.ID, "ended " + q.ID}; !slices.Equal(got, want) {
		t.Errorf("the plain listener heard %q, want %q", got, want)
	}
}
