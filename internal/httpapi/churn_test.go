package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testenv"
)

// churnClient is an HTTP client of its own, so the test can close every
// connection it opened, and with idle connections for all its workers (the
// default two per host would make most requests dial anew).
type churnClient struct {
	h      *harness
	client *http.Client
}

func newChurnClient(h *harness) *churnClient {
	return &churnClient{h: h, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// call sends one request; headers are name/value pairs.
func (c *churnClient) call(ctx context.Context, method, path, body string, headers ...string) (response, error) {
	var payload any // no body at all for ""
	if body != "" {
		payload = body
	}
	return c.h.requestWith(ctx, c.client, method, path, payload, headers...)
}

// agentView is what GET and DELETE /elicitations/{id} and POST /elicit tell
// the agent.
type agentView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Ending string `json:"ending"`
	Result *struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	} `json:"result"`
	Action  string         `json:"action"` // POST /elicit
	Content map[string]any `json:"content"`
}

func decodeView(res response, want int) (agentView, error) {
	var v agentView
	if res.Status != want {
		return v, fmt.Errorf("status %d, want %d: %s", res.Status, want, res.Body)
	}
	if err := json.Unmarshal(res.Body, &v); err != nil {
		return v, fmt.Errorf("body %q: %w", res.Body, err)
	}
	return v, nil
}

// churnForm is seedForm in a given directory and session.
func churnForm(directory, session string, extra ...string) string {
	form := seedForm()
	form["directory"] = directory
	form["sessionID"] = session
	for i := 0; i+1 < len(extra); i += 2 {
		form[extra[i]] = extra[i+1]
	}
	body, _ := json.Marshal(form)
	return string(body)
}

// Directories of the churn. The broker keeps a directory's routes while it
// has a subscriber and frees them with the last one, so the churn keeps
// creating and freeing them.
const (
	churnReplyDir    = "/churn/a"    // replied over REST; subscribers of /events?directory=
	churnRejectDir   = "/churn/b"    // rejected; subscribers with x-opencode-directory
	churnOperatorDir = "/churn/op"   // POST /elicit, answered by an operator's stream
	churnGoneDir     = "/churn/gone" // POST /elicit whose agent hangs up
)

// lifecycle runs question n from creation to its end, the way kind n%6 of
// agent and operator would, and checks what the agent gets.
func (c *churnClient) lifecycle(ctx context.Context, n int) error {
	session := fmt.Sprintf("ses_churn%d", n)
	create := func(directory string, extra ...string) (string, error) {
		res, err := c.call(ctx, http.MethodPost, "/elicitations", churnForm(directory, session, extra...))
		if err != nil {
			return "", err
		}
		v, err := decodeView(res, http.StatusCreated)
		if err != nil {
			return "", fmt.Errorf("create: %w", err)
		}
		return v.ID, nil
	}
	collect := func(id string) (agentView, error) {
		res, err := c.call(ctx, http.MethodGet, "/elicitations/"+id+"?wait=30s", "")
		if err != nil {
			return agentView{}, err
		}
		return decodeView(res, http.StatusOK)
	}
	var (
		got                    agentView
		wantAction, wantEnding string
		wantContent            map[string]any
	)
	switch n % 6 {
	case 0: // the agent long-polls while the operator replies over REST
		id, err := create(churnReplyDir)
		if err != nil {
			return err
		}
		type polled struct {
			view agentView
			err  error
		}
		poll := make(chan polled, 1)
		go func() {
			v, err := collect(id)
			poll <- polled{v, err}
		}()
		res, err := c.call(ctx, http.MethodPost, "/question/"+id+"/reply?directory="+churnReplyDir, `{"answers":[["SY365H"],["Low power"]]}`)
		p := <-poll
		if err != nil || res.Status != http.StatusOK || string(res.Body) != "true" {
			return fmt.Errorf("reply: %d %s %v", res.Status, res.Body, err)
		}
		if got, err = p.view, p.err; err != nil {
			return err
		}
		wantAction, wantEnding = "accept", "replied"
		wantContent = map[string]any{"model": "SY365H", "symptoms": []any{"Low power"}}
	case 1: // the operator declines, scoped by header
		id, err := create(churnRejectDir)
		if err != nil {
			return err
		}
		res, err := c.call(ctx, http.MethodPost, "/question/"+id+"/reject", `{"action":"decline"}`,
			"x-opencode-directory", url.PathEscape(churnRejectDir))
		if err != nil || res.Status != http.StatusOK {
			return fmt.Errorf("reject: %d %s %v", res.Status, res.Body, err)
		}
		if got, err = collect(id); err != nil {
			return err
		}
		wantAction, wantEnding = "decline", "rejected"
	case 2: // the agent withdraws
		id, err := create(churnReplyDir)
		if err != nil {
			return err
		}
		res, err := c.call(ctx, http.MethodDelete, "/elicitations/"+id, "")
		if err != nil {
			return err
		}
		if got, err = decodeView(res, http.StatusOK); err != nil {
			return fmt.Errorf("withdraw: %w", err)
		}
		wantAction, wantEnding = "cancel", "withdrawn"
	case 3: // nobody answers in time
		id, err := create(churnRejectDir, "timeout", "1ms")
		if err != nil {
			return err
		}
		if got, err = collect(id); err != nil {
			return err
		}
		wantAction, wantEnding = "cancel", "timeout"
	case 4: // POST /elicit, answered by the operator watching its stream
		res, err := c.call(ctx, http.MethodPost, "/elicit", churnForm(churnOperatorDir, session))
		if err != nil {
			return err
		}
		v, err := decodeView(res, http.StatusOK)
		if err != nil {
			return fmt.Errorf("elicit: %w", err)
		}
		want := map[string]any{"model": "SY215C", "symptoms": []any{"Overheating"}}
		if v.Action != "accept" || !reflect.DeepEqual(v.Content, want) {
			return fmt.Errorf("elicit: %s, want accept with %v", res.Body, want)
		}
		return nil
	case 5: // POST /elicit whose caller hangs up once it knows the id
		callCtx, hangUp := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(callCtx, http.MethodPost, c.h.URL+"/elicit", strings.NewReader(churnForm(churnGoneDir, session)))
		req.Header.Set("Content-Type", "application/json")
		res, err := c.client.Do(req) // returns at the first keep-alive byte
		if err != nil {
			hangUp()
			return err
		}
		id := res.Header.Get("X-Questiond-Request-Id")
		hangUp()
		res.Body.Close()
		if id == "" {
			return fmt.Errorf("elicit: %d without X-Questiond-Request-Id", res.StatusCode)
		}
		if got, err = collect(id); err != nil {
			return err
		}
		wantAction, wantEnding = "cancel", "disconnected"
	}
	if got.Status != "resolved" || got.Ending != wantEnding || got.Result == nil || got.Result.Action != wantAction ||
		(wantContent != nil && !reflect.DeepEqual(got.Result.Content, wantContent)) {
		b, _ := json.Marshal(got)
		return fmt.Errorf("question %d: agent sees %s, want %s/%s %v", n, b, wantEnding, wantAction, wantContent)
	}
	return nil
}

// subscribeOnce opens one event stream and leaves it, the way kind n%5 of
// client would.
func (c *churnClient) subscribeOnce(ctx context.Context, n int) error {
	path, header := "/event", ""
	switch n % 5 {
	case 1:
		path = "/events?directory=" + churnReplyDir
	case 2:
		path = "/global/event"
	case 3: // hangs up right after asking, maybe before it is registered
		u, _ := url.Parse(c.h.URL)
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(conn, "GET /event?directory=%s HTTP/1.1\r\nHost: %s\r\n\r\n", churnRejectDir, u.Host)
		conn.Close()
		return err
	case 4:
		header = url.PathEscape(churnRejectDir)
	}
	streamCtx, leave := context.WithCancel(ctx)
	defer leave()
	req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, c.h.URL+path, nil)
	if header != "" {
		req.Header.Set("x-opencode-directory", header)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", path, res.StatusCode)
	}
	if n%5 == 2 {
		return nil // gone before reading anything
	}
	r := bufio.NewReader(res.Body)
	first, err := readEventFrame(r)
	if err != nil || first.Type != "server.connected" {
		return fmt.Errorf("GET %s: first frame %+v, %v", path, first, err)
	}
	if n%5 == 0 {
		return nil // gone after server.connected
	}
	// Gone in the middle of the stream: after the first pending question,
	// with more frames on their way.
	for {
		f, err := readEventFrame(r)
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		if f.Type == "question.asked" {
			return nil
		}
	}
}

// readEventFrame reads one `data: …` frame of an /event stream.
func readEventFrame(r *bufio.Reader) (frame, error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return frame{}, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return frame{}, fmt.Errorf("unexpected line %q", line)
		}
		var f frame
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			return frame{}, err
		}
		f.Raw = data
		return f, nil
	}
}

// churnCounts is what the global operator saw of the churn's questions.
type churnCounts struct {
	asked, ended atomic.Int64
}

// runChurn runs lifecycles question lifecycles and cycles subscriptions at
// once, with two operators streaming: one replies to every question of
// churnOperatorDir, one watches /global/event and checks that each churn
// question is announced once and ended once, in that order. It returns once
// everything it started has stopped.
func runChurn(t *testing.T, h *harness, c *churnClient, lifecycles, cycles int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	replier := h.openStream("/event?directory=" + churnOperatorDir)
	replier.expect(t, "server.connected")
	watcher := h.openStream("/global/event")
	watcher.expect(t, "server.connected")

	var operators sync.WaitGroup
	defer func() {
		replier.cancel()
		watcher.cancel()
		operators.Wait()
	}()
	operators.Add(2)
	go func() {
		defer operators.Done()
		failed := false
		for f := range replier.frames { // drained to the end, or the stream's reader would block
			if f.Type != "question.asked" || failed {
				continue
			}
			var q struct{ ID string }
			_ = json.Unmarshal(f.Properties, &q)
			res, err := c.call(ctx, http.MethodPost, "/question/"+q.ID+"/reply", `{"answers":[["SY215C"],["Overheating"]]}`,
				"x-opencode-directory", url.PathEscape(churnOperatorDir))
			if err != nil || res.Status != http.StatusOK {
				t.Errorf("operator: reply to %s: %d %s %v", q.ID, res.Status, res.Body, err)
				failed = true
			}
		}
	}()
	var counts churnCounts
	state := make([]uint8, lifecycles) // 0 unseen, 1 asked, 2 ended
	go func() {
		defer operators.Done()
		for f := range watcher.frames {
			var props struct{ SessionID string }
			_ = json.Unmarshal(f.Properties, &props)
			var n int
			if _, err := fmt.Sscanf(props.SessionID, "ses_churn%d", &n); err != nil || n < 0 || n >= lifecycles {
				continue
			}
			switch {
			case f.Type == "question.asked" && state[n] == 0:
				state[n] = 1
				counts.asked.Add(1)
			case (f.Type == "question.replied" || f.Type == "question.rejected") && state[n] == 1:
				state[n] = 2
				counts.ended.Add(1)
			default:
				t.Errorf("global stream: %s for churn question %d in state %d", f.Type, n, state[n])
			}
		}
	}()

	var wg sync.WaitGroup
	const agents, clients = 8, 4
	var next atomic.Int64
	for range agents {
		wg.Go(func() {
			for n := int(next.Add(1) - 1); n < lifecycles; n = int(next.Add(1) - 1) {
				if err := c.lifecycle(ctx, n); err != nil {
					t.Errorf("lifecycle %d: %v", n, err)
					return
				}
			}
		})
	}
	var cycle atomic.Int64
	for range clients {
		wg.Go(func() {
			for n := int(cycle.Add(1) - 1); n < cycles; n = int(cycle.Add(1) - 1) {
				if err := c.subscribeOnce(ctx, n); err != nil {
					t.Errorf("subscription %d: %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()

	waitFor(t, "the global stream to see every question end (or was it cut off?)", func() bool {
		return counts.ended.Load() == int64(lifecycles) || t.Failed()
	})
	replier.cancel()
	watcher.cancel()
	operators.Wait()
	if a, e := counts.asked.Load(), counts.ended.Load(); a != int64(lifecycles) || e != int64(lifecycles) {
		t.Errorf("the global stream saw %d questions asked and %d ended, want %d", a, e, lifecycles)
	}
}

// quiesce closes every idle client connection and waits until no stream is
// left.
func quiesce(t *testing.T, h *harness, c *churnClient) {
	t.Helper()
	waitFor(t, "every event subscriber to leave", func() bool { return h.bus.Subscribers() == 0 })
	c.client.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestChurnLeavesNothingBehind is the acceptance test "churn": 1 000
// subscribe/unsubscribe cycles and 10 000 question lifecycles, all at once,
// leave the goroutine count and the heap where they were.
func TestChurnLeavesNothingBehind(t *testing.T) {
	testenv.Heavy(t, "load test: 10 000 question lifecycles and 1 000 subscriptions")
	// Registered first, so it runs last: after the harness has shut down,
	// nothing this test started may be left.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before, pgtest.LeakOption()) })

	const retention = 2 * time.Second
	h, _ := newTunedHarness(t, tuning{
		// Ended questions stay readable for two seconds only (agents collect
		// their results at once), so that what remains after the churn is
		// what leaked.
		store: pending.Options{Retention: retention},
		// POST /elicit sends its header soon, so an agent that hangs up
		// knows its question's id.
		api: httpapi.Options{KeepAlive: 5 * time.Millisecond},
	})
	c := newChurnClient(h)
	// Questions that stay pending throughout, so every new stream has
	// question.asked frames to send after server.connected.
	for _, dir := range []string{churnReplyDir, churnRejectDir} {
		form := seedForm()
		form["directory"], form["sessionID"] = dir, "ses_anchor"
		h.create(form)
	}

	// A small round first: connection pools, the broker's maps and the
	// runtime's own caches reach their working size.
	runChurn(t, h, c, 120, 20)
	if t.Failed() {
		t.FailNow()
	}
	quiesce(t, h, c)
	goroutines := settledGoroutines()
	heap := heapInUse()

	start := time.Now()
	lifecycles, cycles := 10000, 1000
	if onPostgres() {
		// Every lifecycle is two commits to a disk shared with the rest of
		// the suite, and the hang guard is for hangs; at a fifth of the
		// lifecycles a leak of 2 KB each still exceeds the slack below.
		lifecycles = 2000
	}
	runChurn(t, h, c, lifecycles, cycles)
	if t.Failed() {
		t.FailNow()
	}
	elapsed := time.Since(start)
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)
	quiesce(t, h, c)

	waitFor(t, fmt.Sprintf("the goroutine count to come back to %d", goroutines), func() bool {
		return runtime.NumGoroutine() <= goroutines
	})
	// Ended questions are forgotten within two retention periods; until
	// then they are part of the heap.
	const slack = 4 << 20 // a leak of 400 bytes a lifecycle exceeds it
	after := heapInUse()
	for deadline := time.Now().Add(hangGuard); after > heap+slack; after = heapInUse() {
		if time.Now().After(deadline) {
			t.Fatalf("the heap holds %.1f MiB %v after the churn, %.1f MiB before it", mib(after), hangGuard, mib(heap))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d lifecycles and %d subscriptions in %v; goroutines %d before, %d after; heap %.1f MiB before, %.1f MiB at the end of the churn, %.1f MiB after",
		lifecycles, cycles, elapsed.Round(time.Millisecond), goroutines, runtime.NumGoroutine(),
		mib(heap), mib(peak.HeapAlloc), mib(after))

	var listed []struct{ SessionID string }
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 2 || listed[0].SessionID != "ses_anchor" || listed[1].SessionID != "ses_anchor" {
		t.Errorf("pending after the churn: %+v, want the two anchors", listed)
	}
}

// settledGoroutines is the goroutine count once it has stopped falling:
// connections closed by a client take their server goroutines a moment.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for stable := 0; stable < 5; {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			stable++
		} else {
			stable = 0
		}
		n = m
	}
	return n
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
