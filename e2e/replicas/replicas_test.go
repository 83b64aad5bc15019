// Package replicas runs several questiond processes on one PostgreSQL
// database, as a load balancer would spread them, and checks that they
// behave as one questiond.
package replicas

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// binary is cmd/questiond, built once for every suite (testkit.Binary).
func binary(t *testing.T) string { return testkit.Binary(t) }

// replica is one questiond process.
type replica struct {
	name string
	base string
	proc *launch.Process
}

// startReplica starts questiond on a random port with --store postgres on
// the database at url.
func startReplica(t *testing.T, name, url string) *replica {
	t.Helper()
	return startProcess(t, name, []string{"QUESTIOND_DATABASE_URL=" + url}, "--store", "postgres")
}

// startProcess starts questiond with env added to the test's and args.
func startProcess(t *testing.T, name string, env []string, args ...string) *replica {
	t.Helper()
	// A short keepalive: a retry that attaches to a wait sends its headers
	// with the first keepalive byte.
	cmd := exec.Command(binary(t), append([]string{"--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug", "--keepalive", "500ms"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	p, err := launch.Start(cmd, launch.Options{Name: "replica " + name, StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, base: p.URL, proc: p}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("replica %s logs:\n%s", name, r.log())
		}
	})
	return r
}

func (r *replica) log() string { return r.proc.Output() }

var client = &http.Client{Timeout: 30 * time.Second}

// call sends a JSON request and returns the status and body.
func (r *replica) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, r.name, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// event is one frame of an OpenCode event stream.
type event = testkit.Event

// stream is a replica's /event stream, read into a channel.
type stream struct {
	events chan event
}

func (r *replica) stream(t *testing.T) *stream {
	t.Helper()
	return r.streamAt(t, "/event", "")
}

// streamAt opens the stream at path (/event or /global/event) as a client
// naming itself userAgent (an OpenCode console's is "opencode/…").
func (r *replica) streamAt(t *testing.T, path, userAgent string) *stream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if userAgent != "" {
		req.Header.Set("User-Agent", userAgent)
	}
	res, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	s := &stream{events: make(chan event, 1000)}
	go func() {
		defer close(s.events)
		for f := range testkit.Frames(res.Body, 0) {
			data := f.Data
			var e event
			var global struct{ Payload *event }
			if json.Unmarshal([]byte(data), &global) == nil && global.Payload != nil {
				e = *global.Payload
			} else if json.Unmarshal([]byte(data), &e) != nil {
				continue
			}
			if strings.HasPrefix(e.Type, "question.") {
				s.events <- e
			}
		}
	}()
	return s
}

// next returns the stream's next question event.
func (s *stream) next(t *testing.T, who string) event {
	t.Helper()
	select {
	case e, ok := <-s.events:
		if !ok {
			t.Fatalf("%s: stream ended", who)
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no event in 10 s", who)
		return event{}
	}
}

const form = `{"message":"Deploy?","requestedSchema":{"type":"object","properties":{"go":{"type":"string","enum":["yes","no"]}},"required":["go"]}}`

// create asks a question on r and returns its id.
func create(t *testing.T, r *replica) string {
	t.Helper()
	code, body := r.call(t, http.MethodPost, "/elicitations", form)
	var q struct{ ID string }
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &q) != nil || q.ID == "" {
		t.Fatalf("create on %s: %d %s", r.name, code, body)
	}
	return q.ID
}

// Three replicas on one database: a question asked on A is announced on
// B's and C's streams; C's reply reaches the agent waiting on A; a reply
// and a reject on different replicas end a question once, and the loser
// gets the 404 a single questiond gives; a replica started later sees
// every pending question.
func TestThreeReplicasActAsOne(t *testing.T) {
	url := pgtest.Database(t)
	a, b, c := startReplica(t, "A", url), startReplica(t, "B", url), startReplica(t, "C", url)
	streamB, streamC := b.stream(t), c.stream(t)

	id := create(t, a)
	for who, s := range map[string]*stream{"B": streamB, "C": streamC} {
		if e := s.next(t, who); e.Type != "question.asked" || e.Properties.ID != id {
			t.Fatalf("%s's stream: %+v; want question.asked of %s", who, e, id)
		}
	}
	waited := make(chan string, 1)
	go func() {
		_, body := a.call(t, http.MethodGet, "/elicitations/"+id+"?wait=20s", "")
		waited <- body
	}()
	if code, body := c.call(t, http.MethodPost, "/question/"+id+"/reply", `{"answers":[["yes"]]}`); code != http.StatusOK || strings.TrimSpace(body) != "true" {
		t.Fatalf("reply on C: %d %s", code, body)
	}
	select {
	case body := <-waited:
		if !strings.Contains(body, `"ending":"replied"`) || !strings.Contains(body, `"go":"yes"`) {
			t.Fatalf("A's waiting agent got %s; want C's reply", body)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the agent waiting on A never heard of C's reply")
	}
	for who, s := range map[string]*stream{"B": streamB, "C": streamC} {
		if e := s.next(t, who); e.Type != "question.replied" || e.Properties.RequestID != id {
			t.Fatalf("%s's stream: %+v; want question.replied of %s", who, e, id)
		}
	}

	// A reply on B and a reject on C at once, several times.
	for range 5 {
		id := create(t, a)
		streamB.next(t, "B")
		streamC.next(t, "C")
		var wg sync.WaitGroup
		codes := make([]int, 2)
		bodies := make([]string, 2)
		wg.Go(func() {
			codes[0], bodies[0] = b.call(t, http.MethodPost, "/question/"+id+"/reply", `{"answers":[["no"]]}`)
		})
		wg.Go(func() { codes[1], bodies[1] = c.call(t, http.MethodPost, "/question/"+id+"/reject", "") })
		wg.Wait()
		won, lost := 0, 0
		for i := range codes {
			switch codes[i] {
			case http.StatusOK:
				won++
			case http.StatusNotFound:
				lost++
				if !strings.Contains(bodies[i], "NotFoundError") {
					t.Errorf("the loser's 404 body is %s; want OpenCode's NotFoundError", bodies[i])
				}
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("reply on B and reject on C: %v %v; want one 200 and one 404", codes, bodies)
		}
		want := "question.replied"
		if codes[0] != http.StatusOK {
			want = "question.rejected"
		}
		for who, s := range map[string]*stream{"B": streamB, "C": streamC} {
			if e := s.next(t, who); e.Type != want || e.Properties.RequestID != id {
				t.Fatalf("%s's stream: %+v; want %s of %s", who, e, want, id)
			}
		}
	}

	pendingID := create(t, b)
	d := startReplica(t, "D", url)
	if code, body := d.call(t, http.MethodGet, "/question", ""); code != http.StatusOK || !strings.Contains(body, pendingID) || strings.Count(body, `"que_`) != 1 {
		t.Fatalf("late replica's /question: %d %s; want only %s", code, body, pendingID)
	}
}
