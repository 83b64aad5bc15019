package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// The Idempotency-Key header, the replay marker and the 400 and 422 answers
// of both create routes follow the document. (The 409 needs a request parked
// inside its creation; internal/httpapi forces that with a test hook.)
func TestLiveIdempotencyFollowsTheDocument(t *testing.T) {
	l := startLive(t, httpapi.Auth{}, httpapi.Limits{})
	events := l.open(t, "/event")
	events.next(t, "server.connected")
	key := func(k string) []string { return []string{"Idempotency-Key", k} }

	first := l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody, header: key("create-1")}, 201)
	events.next(t, "question.asked")
	again := l.do(t, exchange{method: "POST", path: "/elicitations", body: deployBody, header: key(`"create-1"`)}, 201)
	if again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Errorf("replay %v %s, want the first answer %s marked as a replay", again.header, again.body, first.body)
	}
	other := strings.Replace(deployBody, `"timeout":"90s"`, `"timeout":"91s"`, 1)
	l.do(t, exchange{method: "POST", path: "/elicitations", body: other, header: key("create-1")}, 422)
	l.do(t, exchange{method: "POST", path: "/elicit", body: deployBody, header: key("create-1")}, 422)
	for _, path := range []string{"/elicitations", "/elicit"} {
		l.do(t, exchange{method: "POST", path: path, body: deployBody, header: key(`"unterminated`)}, 400)
		l.do(t, exchange{method: "POST", path: path, body: deployBody, header: key(strings.Repeat("k", 256))}, 400)
		l.do(t, exchange{method: "POST", path: path, body: deployBody, header: key("clé"), brokenRequest: true}, 400)
	}

	// POST /elicit: answered once, then replayed at once with the result.
	type sent struct {
		r   *result
		err error
	}
	done := make(chan sent, 1)
	go func() {
		r, err := l.send(context.Background(), exchange{method: "POST", path: "/elicit", body: deployBody, header: key("elicit-1")})
		done <- sent{r, err}
	}()
	asked, _ := events.next(t, "question.asked")
	id := asked["properties"].(map[string]any)["id"].(string)
	l.do(t, exchange{method: "POST", path: "/question/" + id + "/reject"}, 200)
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	l.check(t, got.r, 200)
	replay := l.do(t, exchange{method: "POST", path: "/elicit", body: deployBody, header: key("elicit-1")}, 200)
	if replay.header.Get("Idempotent-Replayed") != "true" || replay.header.Get("X-Questiond-Request-Id") != id ||
		strings.TrimSpace(string(replay.body)) != strings.TrimSpace(string(got.r.body)) {
		t.Errorf("replay %v %s, want %s's result %s", replay.header, replay.body, id, got.r.body)
	}

	l.assertValidated(t, []string{
		"elicitation.create 201", "elicitation.create 400", "elicitation.create 422",
		"elicitation.elicit 200", "elicitation.elicit 400", "elicitation.elicit 422",
	})
}
