package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testenv"
)

// hangGuard bounds every wait of the load tests, so a broken server fails a
// test instead of hanging it. Nothing is ordered or measured by it.
const hangGuard = 3 * time.Minute

// newTunedHarness is newHarness with the given broker, store and server
// settings. It logs warnings only (a test running thousands of requests must
// not keep a debug line for each in memory) and also returns them for
// inspection.
func newTunedHarness(t *testing.T, tu tuning) (*harness, *observer.ObservedLogs) {
	t.Helper()
	observed, logs := observer.New(zapcore.WarnLevel)
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel)).Core(), observed))
	return newHarnessWith(t, tu, log), logs
}

// waitFor polls cond until it holds; it fails the test after hangGuard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v: %s", hangGuard, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bulkyForm is an elicitation whose question.asked frame is about 2.5 KiB, so
// that a client that stops reading fills its socket buffers quickly.
func bulkyForm(seq int) map[string]any {
	message := fmt.Sprintf("Load test question %d. ", seq) + strings.Repeat("Please look at the machine. ", 24)
	description := strings.Repeat("Describe what the operator sees on the control panel. ", 30)
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"model": map[string]any{"type": "string", "title": "Model", "description": description, "enum": []string{"SY215C", "SY365H"}},
		},
		"required": []string{"model"},
	})
	return map[string]any{"message": message, "requestedSchema": json.RawMessage(schema)}
}

// dialStalled subscribes to path over raw HTTP/1.1 with a small receive
// buffer, reads the response head and the server.connected frame (so the
// subscriber is registered), and from then on never reads.
func dialStalled(t *testing.T, h *harness, path string) *net.TCPConn {
	t.Helper()
	u, _ := url.Parse(h.URL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, u.Host); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(hangGuard))
	// Byte by byte, so that nothing after server.connected is read ahead.
	var head bytes.Buffer
	one := make([]byte, 1)
	for !bytes.Contains(head.Bytes(), []byte(`"type":"server.connected"`)) || !bytes.HasSuffix(head.Bytes(), []byte("\n\n")) {
		if _, err := conn.Read(one); err != nil {
			t.Fatalf("stalled client: reading the start of the stream: %v (got %q)", err, head.Bytes())
		}
		head.WriteByte(one[0])
	}
	if !bytes.HasPrefix(head.Bytes(), []byte("HTTP/1.1 200 ")) {
		t.Fatalf("stalled client: response %q", head.Bytes())
	}
	return conn
}

// TestStalledSubscriberIsCutOff is the acceptance test "stalled subscriber":
// a raw TCP client subscribes to /event and never reads again, while an
// operator's stream follows 10 000 events of real question lifecycles. The
// operator gets every event, in order, and the stalled client is cut off (and
// logged) without anyone waiting for it.
func TestStalledSubscriberIsCutOff(t *testing.T) {
	testenv.Heavy(t, "load test: a never-reading subscriber under 10 000 events")
	h, logs := newTunedHarness(t, tuning{
		// A short queue, so the stalled client is cut off as soon as its
		// socket buffers are full. The write timeout is longer than the
		// test may take, so it cannot hide a broker that waits for the
		// stalled client.
		events: sse.Options{QueueLength: 32, WriteTimeout: 2 * hangGuard},
	})
	stalled := dialStalled(t, h, "/event")
	normal := h.openStream("/event")
	normal.expect(t, "server.connected")
	if n := h.bus.Subscribers(); n != 2 {
		t.Fatalf("%d subscribers, want 2", n)
	}

	// Agents ask and end questions one after the other, each in its own
	// session; a question's events are question.asked (a few KiB) and its
	// ending. An agent starts its next question once the operator has seen
	// the ending of its last, so the operator is at most two frames per agent
	// behind; the stalled client gets the same events and no such favour.
	const agents, perAgent = 4, 1250
	seen := make([]chan struct{}, agents)
	for a := range seen {
		seen[a] = make(chan struct{}, 1)
	}
	done := make(chan struct{})
	defer close(done)
	failed := make(chan error, agents) // agents never touch t: they may outlive a failed test
	for a := range agents {
		go func() {
			for i := range perAgent {
				if err := askAndEnd(h, a, i); err != nil {
					failed <- err
					return
				}
				select {
				case <-seen[a]:
				case <-done:
					return
				}
			}
		}()
	}

	// The operator's view: every agent's events exactly in the agent's order.
	type position struct {
		seq   int
		ended bool // question.asked of seq seen, its ending is next
	}
	next := make([]position, agents)
	start := time.Now()
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	for n := 0; n < 2*agents*perAgent; {
		var f frame
		select {
		case got, ok := <-normal.frames:
			if !ok {
				t.Fatalf("the operator's stream ended after %d events", n)
			}
			f = got
		case err := <-failed:
			t.Fatal(err)
		case <-guard.C:
			t.Fatalf("the operator got %d events in %v, want %d", n, hangGuard, 2*agents*perAgent)
		}
		if f.Type == "server.heartbeat" {
			continue
		}
		var props struct {
			SessionID string `json:"sessionID"`
		}
		_ = json.Unmarshal(f.Properties, &props)
		var a, seq int
		if _, err := fmt.Sscanf(props.SessionID, "ses_agent%dq%d", &a, &seq); err != nil || a < 0 || a >= agents {
			t.Fatalf("event %d is no agent's: %.200s", n, f.Raw)
		}
		want := next[a]
		switch {
		case seq != want.seq:
			t.Fatalf("event %d: question %d of agent %d, want question %d: %.200s", n, seq, a, want.seq, f.Raw)
		case !want.ended && f.Type != "question.asked":
			t.Fatalf("event %d: %s of agent %d's question %d before question.asked", n, f.Type, a, seq)
		case want.ended && f.Type != wantEnding(seq):
			t.Fatalf("event %d: %s for agent %d's question %d, want %s", n, f.Type, a, seq, wantEnding(seq))
		}
		if want.ended {
			next[a] = position{seq: seq + 1}
			seen[a] <- struct{}{}
		} else {
			next[a].ended = true
		}
		n++
	}
	t.Logf("the operator got %d events in %v", 2*agents*perAgent, time.Since(start).Round(time.Millisecond))

	waitFor(t, "the stalled subscriber to be removed", func() bool { return h.bus.Subscribers() == 1 })
	cutOff := logs.FilterMessage("event subscriber cut off").All()
	if len(cutOff) != 1 {
		t.Fatalf("%d cut-off lines logged, want 1: %v", len(cutOff), logs.All())
	}
	t.Logf("cut off: %v", cutOff[0].ContextMap()["reason"])

	// The server has closed the connection too. The kernel still holds
	// megabytes for it, which a 4 KiB window takes seconds to drain; but a
	// byte sent to a socket its owner has closed is answered with a reset,
	// so the end shows at once. (An open stream would take the byte and keep
	// the connection, and reading would run into the deadline.)
	start = time.Now()
	_, _ = stalled.Write([]byte("\r\n"))
	_ = stalled.SetReadBuffer(4 << 20)
	_ = stalled.SetReadDeadline(time.Now().Add(hangGuard))
	n, err := io.Copy(io.Discard, stalled)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the stalled connection is still open after %v (%d bytes read)", hangGuard, n)
	}
	t.Logf("the stalled connection ended after %v: %d more bytes, then %v", time.Since(start).Round(time.Millisecond), n, orEOF(err))

	// The operator's stream is still live.
	id := h.create(seedForm()).ID
	if asked := normal.expect(t, "question.asked"); !strings.Contains(asked.Raw, id) {
		t.Fatalf("after the cut-off: %.120s…, want question %s", asked.Raw, id)
	}
}

// wantEnding is the event that ends question seq of askAndEnd.
func wantEnding(seq int) string {
	if seq%3 == 0 {
		return "question.replied"
	}
	return "question.rejected"
}

// askAndEnd asks question seq of an agent and ends it: a reply, a
// rejection or a withdrawal, in turn.
func askAndEnd(h *harness, agent, seq int) error {
	form := bulkyForm(seq)
	form["sessionID"] = fmt.Sprintf("ses_agent%dq%d", agent, seq)
	res, err := h.request(http.MethodPost, "/elicitations", form)
	if err != nil || res.Status != http.StatusCreated {
		return fmt.Errorf("agent %d: create %d: %d %s %v", agent, seq, res.Status, res.Body, err)
	}
	var c created
	if err := json.Unmarshal(res.Body, &c); err != nil {
		return err
	}
	switch seq % 3 {
	case 0:
		res, err = h.request(http.MethodPost, "/question/"+c.ID+"/reply", `{"answers":[["SY215C"]]}`)
	case 1:
		res, err = h.request(http.MethodPost, "/question/"+c.ID+"/reject", nil)
	case 2:
		res, err = h.request(http.MethodDelete, "/elicitations/"+c.ID, nil)
	}
	if err != nil || res.Status != http.StatusOK {
		return fmt.Errorf("agent %d: ending %d: %d %s %v", agent, seq, res.Status, res.Body, err)
	}
	return nil
}

func orEOF(err error) any {
	if err == nil {
		return io.EOF
	}
	return err
}
