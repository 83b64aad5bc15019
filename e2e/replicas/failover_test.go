package replicas

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pgtest"
)

// An agent waiting on replica A (a keyed POST /elicit) when A is killed
// with SIGKILL sends the same request to B and picks up the same
// question's wait; C's reply ends it. Nothing of A's question was lost
// with A.
func TestKilledReplicaAgentResumesElsewhere(t *testing.T) {
	url := pgtest.Database(t)
	a, b, c := startReplica(t, "A", url), startReplica(t, "B", url), startReplica(t, "C", url)
	streamC := c.stream(t)

	elicit := func(r *replica) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, r.base+"/elicit", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"agent-retry-1"`)
		return (&http.Client{}).Do(req)
	}
	first, err := elicit(a)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Body.Close()
	id := first.Header.Get("X-Questiond-Request-Id")
	if e := streamC.next(t, "C"); e.Type != "question.asked" || e.Properties.ID != id || id == "" {
		t.Fatalf("C's stream: %+v; want question.asked of %q", e, id)
	}
	if err := a.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.proc.Exited()
	if _, err := io.ReadAll(first.Body); err == nil {
		// The body may end cleanly or with a reset; either way no result came.
		t.Log("A's response ended without a result, as expected")
	}

	retry, err := elicit(b)
	if err != nil {
		t.Fatal(err)
	}
	defer retry.Body.Close()
	if got := retry.Header.Get("X-Questiond-Request-Id"); got != id {
		t.Fatalf("the retry on B waits on %q; want the same question %q", got, id)
	}
	if code, body := c.call(t, http.MethodPost, "/question/"+id+"/reply", `{"answers":[["yes"]]}`); code != http.StatusOK {
		t.Fatalf("reply on C: %d %s", code, body)
	}
	body, err := io.ReadAll(retry.Body)
	if err != nil || !strings.Contains(string(body), `"action":"accept"`) || !strings.Contains(string(body), `"go":"yes"`) {
		t.Fatalf("the agent's retry on B answered %s, %v; want C's reply", body, err)
	}
	if code, body := b.call(t, http.MethodGet, "/question", ""); code != http.StatusOK || strings.Contains(body, "que_") {
		t.Fatalf("pending after the reply: %d %s; want none (no second question)", code, body)
	}
}

// PostgreSQL going away: creations get a 503 with a JSON error and store
// nothing, lists still answer from the replica's mirror, an agent waiting
// keeps waiting, and once PostgreSQL is back every replica resumes (the
// reconnection is logged once per replica, not per attempt) and the
// waiting agent gets the reply given through another replica.
func TestPostgresOutage(t *testing.T) {
	url := pgtest.Database(t)
	server := pgtest.Shared(t)
	a, b := startReplica(t, "A", url), startReplica(t, "B", url)
	streamB := b.stream(t)
	id := create(t, a)
	streamB.next(t, "B")
	waited := make(chan string, 1)
	go func() {
		_, body := b.call(t, http.MethodGet, "/elicitations/"+id+"?wait=60s", "")
		waited <- body
	}()

	if err := server.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = server.Restart()
		}
	}()
	code, body := a.call(t, http.MethodPost, "/elicitations", form)
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if code != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &e) != nil || e.Name != "ServiceUnavailable" || !strings.Contains(e.Data.Message, "unavailable") {
		t.Fatalf("create while PostgreSQL is down: %d %s; want a 503 JSON error", code, body)
	}
	if code, body := a.call(t, http.MethodGet, "/question", ""); code != http.StatusOK || !strings.Contains(body, id) {
		t.Fatalf("list while PostgreSQL is down: %d %s; want the mirror's %s", code, body, id)
	}
	if code, _ := a.call(t, http.MethodPost, "/question/"+id+"/reply", `{"answers":[["no"]]}`); code != http.StatusServiceUnavailable {
		t.Fatalf("reply while PostgreSQL is down: %d; want 503", code)
	}
	time.Sleep(1500 * time.Millisecond) // let the tailers try (and fail) to reconnect a few times
	select {
	case body := <-waited:
		t.Fatalf("the waiting agent was answered during the outage: %s", body)
	default:
	}
	if err := server.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted = true

	if code, body := a.call(t, http.MethodPost, "/question/"+id+"/reply", `{"answers":[["yes"]]}`); code != http.StatusOK {
		t.Fatalf("reply once PostgreSQL is back: %d %s", code, body)
	}
	select {
	case body := <-waited:
		if !strings.Contains(body, `"ending":"replied"`) {
			t.Fatalf("the waiting agent got %s; want the reply", body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent waiting on B never heard of the reply given on A")
	}
	if e := streamB.next(t, "B"); e.Type != "question.replied" || e.Properties.RequestID != id {
		t.Fatalf("B's stream after the outage: %+v; want question.replied of %s", e, id)
	}
	for _, r := range []*replica{a, b} {
		deadline := time.Now().Add(15 * time.Second)
		for countLogs(r.log(), "change log reachable again; caught up") < 1 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if n := countLogs(r.log(), "change log unreachable; reconnecting with backoff"); n != 1 {
			t.Errorf("replica %s logged the outage %d times; want once", r.name, n)
		}
		if n := countLogs(r.log(), "change log reachable again; caught up"); n != 1 {
			t.Errorf("replica %s logged the recovery %d times; want once", r.name, n)
		}
	}
}

func countLogs(logs, msg string) int {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var entry struct{ Msg string }
		if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Msg == msg {
			n++
		}
	}
	return n
}

// PostgreSQL crashes (immediate shutdown) and comes back while agents keep
// asking through three replicas, each retrying with its Idempotency-Key
// until acknowledged: every acknowledged question is there afterwards,
// none twice, and every replica's event stream announced each question
// exactly once.
func TestPostgresCrashUnderLoad(t *testing.T) {
	url := pgtest.Database(t)
	server := pgtest.Shared(t)
	replicas := []*replica{startReplica(t, "A", url), startReplica(t, "B", url), startReplica(t, "C", url)}
	streams := make([]*stream, len(replicas))
	for i, r := range replicas {
		streams[i] = r.stream(t)
	}
	const agents, each = 6, 15
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var mu sync.Mutex
	acked := map[string]string{} // key → question id
	var wg sync.WaitGroup
	for ag := range agents {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf(`"agent%d-%d"`, ag, i)
				for attempt := 0; ; attempt++ {
					if ctx.Err() != nil {
						t.Errorf("%s never acknowledged", key)
						return
					}
					r := replicas[(ag+attempt)%len(replicas)]
					id, ok := tryCreate(r, key)
					if ok {
						mu.Lock()
						if old, seen := acked[key]; seen && old != id {
							t.Errorf("%s acknowledged as %s, then as %s", key, old, id)
						}
						acked[key] = id
						mu.Unlock()
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	if err := server.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	if err := server.Restart(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(acked) != agents*each {
		t.Fatalf("%d of %d questions acknowledged", len(acked), agents*each)
	}
	// Every acknowledged question is pending, once, on every replica, as
	// soon as its tail has caught up (within its reconnection backoff).
	for _, r := range replicas {
		var list []struct{ ID string }
		for deadline := time.Now().Add(15 * time.Second); ; {
			code, body := r.call(t, http.MethodGet, "/question", "")
			list = nil
			if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil {
				t.Fatalf("%s: /question: %d %s", r.name, code, body)
			}
			if len(list) >= len(acked) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		ids := map[string]int{}
		for _, q := range list {
			ids[q.ID]++
		}
		for key, id := range acked {
			if ids[id] != 1 {
				t.Errorf("%s lists %s (%s) %d times; want once", r.name, id, key, ids[id])
			}
		}
		if len(list) != len(acked) {
			t.Errorf("%s lists %d questions; %d were acknowledged", r.name, len(list), len(acked))
		}
	}
	for i, s := range streams {
		seen := map[string]int{}
		for len(seen) < len(acked) {
			e := s.next(t, replicas[i].name)
			if e.Type == "question.asked" {
				seen[e.Properties.ID]++
				if seen[e.Properties.ID] > 1 {
					t.Fatalf("%s's stream announced %s twice", replicas[i].name, e.Properties.ID)
				}
			}
		}
		for _, id := range acked {
			if seen[id] != 1 {
				t.Errorf("%s's stream announced %s %d times", replicas[i].name, id, seen[id])
			}
		}
	}
}

// tryCreate asks on r with key; it reports the id once acknowledged (201).
func tryCreate(r *replica, key string) (string, bool) {
	req, err := http.NewRequest(http.MethodPost, r.base+"/elicitations", strings.NewReader(form))
	if err != nil {
		return "", false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := client.Do(req)
	if err != nil {
		return "", false
	}
	defer res.Body.Close()
	var q struct{ ID string }
	if res.StatusCode != http.StatusCreated || json.NewDecoder(res.Body).Decode(&q) != nil {
		return "", false
	}
	return q.ID, true
}

// An agent whose keyed POST /elicit to A drops (A stays up) and whose
// retry goes to B keeps its question: A's reconnect grace runs out, but the
// wait now lives on B, so A does not withdraw it, and C's reply reaches
// the agent through B.
func TestRetryOnAnotherReplicaOutlivesTheGrace(t *testing.T) {
	url := pgtest.Database(t)
	env := []string{"QUESTIOND_DATABASE_URL=" + url}
	a := startProcess(t, "A", env, "--store", "postgres", "--reconnect-grace", "1s")
	b := startProcess(t, "B", env, "--store", "postgres", "--reconnect-grace", "1s")
	c := startReplica(t, "C", url)
	streamC := c.stream(t)
	elicit := func(ctx context.Context, r *replica) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/elicit", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"grace-1"`)
		return (&http.Client{}).Do(req)
	}
	ctx, drop := context.WithCancel(context.Background())
	first, err := elicit(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	id := first.Header.Get("X-Questiond-Request-Id")
	if e := streamC.next(t, "C"); e.Type != "question.asked" || e.Properties.ID != id {
		t.Fatalf("C's stream: %+v; want question.asked of %q", e, id)
	}
	drop() // the agent's connection to A breaks; A starts its grace
	first.Body.Close()
	retry, err := elicit(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer retry.Body.Close()
	if got := retry.Header.Get("X-Questiond-Request-Id"); got != id {
		t.Fatalf("the retry on B waits on %q; want %q", got, id)
	}
	time.Sleep(2500 * time.Millisecond) // A's grace (1 s) is over
	if code, body := c.call(t, http.MethodGet, "/elicitations/"+id, ""); code != http.StatusOK || !strings.Contains(body, `"status":"pending"`) {
		t.Fatalf("after A's grace: %d %s; want the question still pending", code, body)
	}
	if code, body := c.call(t, http.MethodPost, "/question/"+id+"/reply", `{"answers":[["yes"]]}`); code != http.StatusOK {
		t.Fatalf("reply on C: %d %s", code, body)
	}
	body, err := io.ReadAll(retry.Body)
	if err != nil || !strings.Contains(string(body), `"go":"yes"`) {
		t.Fatalf("the agent's retry on B answered %s, %v; want C's reply", body, err)
	}
}
