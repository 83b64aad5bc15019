package pending_test

import (
	"testing"

	"github.com/questiond/questiond/internal/pending"
)

func TestFilterMatches(t *testing.T) {
	t.Parallel()
	q := func(dir, session, owner string) *pending.Question {
		return &pending.Question{ID: "que_1", Directory: dir, SessionID: session, Owner: owner}
	}
	tests := map[string]struct {
		filter pending.Filter
		q      *pending.Question
		want   bool
	}{
		"empty filter, question with dir":          {pending.Filter{}, q("/a", "s", "o"), true},
		"empty filter, question without dir":       {pending.Filter{}, q("", "s", "o"), true},
		"same dir":                                 {pending.Filter{Directory: "/a"}, q("/a", "s", "o"), true},
		"other dir":                                {pending.Filter{Directory: "/b"}, q("/a", "s", "o"), false},
		"dir is not a prefix match":                {pending.Filter{Directory: "/a/sub"}, q("/a", "s", "o"), false},
		"question without dir, caller with dir":    {pending.Filter{Directory: "/b"}, q("", "s", "o"), true},
		"session matches":                          {pending.Filter{SessionID: "s"}, q("/a", "s", "o"), true},
		"session differs":                          {pending.Filter{SessionID: "t"}, q("/a", "s", "o"), false},
		"owner matches":                            {pending.Filter{Owner: "o"}, q("", "s", "o"), true},
		"owner differs":                            {pending.Filter{Owner: "p"}, q("", "s", "o"), false},
		"owner set, question has none":             {pending.Filter{Owner: "o"}, q("", "s", ""), false},
		"all fields match":                         {pending.Filter{Directory: "/a", SessionID: "s", Owner: "o"}, q("/a", "s", "o"), true},
		"all fields but dir match":                 {pending.Filter{Directory: "/b", SessionID: "s", Owner: "o"}, q("/a", "s", "o"), false},
		"all fields, question without dir matches": {pending.Filter{Directory: "/b", SessionID: "s", Owner: "o"}, q("", "s", "o"), true},
		"nil question":                             {pending.Filter{}, nil, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tt.filter.Matches(tt.q); got != tt.want {
				t.Errorf("%+v.Matches(%+v) = %v, want %v", tt.filter, tt.q, got, tt.want)
			}
		})
	}
}
