package replicas

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/questiond/questiond/internal/pgtest"
)

// Agents ask and operators answer through three replicas at once: every
// replica's streams (/event and /global/event, a standard client's and an
// OpenCode console's) carry the same events in the same order (the change
// log's), none missing, each question's question.asked before its ending.
func TestStreamsAgreeOnOneOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three questiond processes")
	}
	url := pgtest.Database(t)
	replicas := []*replica{startReplica(t, "A", url), startReplica(t, "B", url), startReplica(t, "C", url)}
	kinds := []struct{ path, userAgent string }{
		{"/event", ""}, {"/global/event", ""}, {"/event", "opencode/1.0"}, {"/global/event", "opencode/1.0"},
	}
	var streams []*stream
	var names []string
	for _, r := range replicas {
		for _, k := range kinds {
			streams = append(streams, r.streamAt(t, k.path, k.userAgent))
			names = append(names, r.name+" "+k.path+" "+k.userAgent)
		}
	}

	const agents, rounds = 12, 3
	var wg sync.WaitGroup
	for n := range agents {
		wg.Go(func() {
			for k := range rounds {
				asker := replicas[(n+k)%len(replicas)]
				answerer := replicas[(n+k+1)%len(replicas)]
				// A session each: a console shows one question of a
				// session at a time, in its own order.
				body := strings.Replace(form, "{", fmt.Sprintf(`{"sessionID":"ses_order%02d%02d",`, n, k), 1)
				code, body := asker.call(t, http.MethodPost, "/elicitations", body)
				id, ok := idOf(code, body)
				if !ok {
					t.Errorf("create on %s: %d %s", asker.name, code, body)
					return
				}
				path, payload := "/question/"+id+"/reply", `{"answers":[["yes"]]}`
				if (n+k)%2 == 1 {
					path, payload = "/question/"+id+"/reject", ""
				}
				if code, body := answerer.call(t, http.MethodPost, path, payload); code != http.StatusOK || strings.TrimSpace(body) != "true" {
					t.Errorf("answer on %s: %d %s", answerer.name, code, body)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	const total = 2 * agents * rounds
	seqs := make([][]string, len(streams))
	for i, s := range streams {
		for range total {
			e := s.next(t, names[i])
			seqs[i] = append(seqs[i], e.Type+" "+e.Properties.ID+e.Properties.RequestID)
		}
	}
	asked, ended := map[string]bool{}, map[string]bool{}
	for _, e := range seqs[0] {
		typ, id, _ := strings.Cut(e, " ")
		switch {
		case typ == "question.asked" && !asked[id]:
			asked[id] = true
		case typ != "question.asked" && asked[id] && !ended[id]:
			ended[id] = true
		default:
			t.Fatalf("%s: %q out of place in\n%s", names[0], e, strings.Join(seqs[0], "\n"))
		}
	}
	if len(asked) != agents*rounds || len(ended) != agents*rounds {
		t.Fatalf("%s has %d questions asked and %d ended; want %d each", names[0], len(asked), len(ended), agents*rounds)
	}
	for i := 1; i < len(seqs); i++ {
		if !slices.Equal(seqs[0], seqs[i]) {
			t.Fatalf("%s differs from %s:\n%s", names[i], names[0], sideBySide(seqs[0], seqs[i]))
		}
	}
}

// idOf reads the id of a question a create answered.
func idOf(code int, body string) (string, bool) {
	_, rest, ok := strings.Cut(body, `"id":"`)
	id, _, ok2 := strings.Cut(rest, `"`)
	return id, code == http.StatusCreated && ok && ok2 && id != ""
}

// sideBySide lists two event sequences line by line, marking where they
// differ.
func sideBySide(a, b []string) string {
	var out strings.Builder
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		mark := "  "
		if x != y {
			mark = "≠ "
		}
		fmt.Fprintf(&out, "%s%-60s %s\n", mark, x, y)
	}
	return out.String()
}
