package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
)

// Restart drills of questiond --upstream with the real TUI attached to it
// (issue 26, acceptance (e)), and a question of OpenCode's own arriving
// while questiond's is shown (acceptance (f)).

// askedLog is every question.asked of one session tree that an operator's
// stream through questiond (GET /global/event, not the TUI's, so not
// gated) carried, connection by connection: the stream ends when either
// server restarts, and askedLog opens it again.
type askedLog struct {
	mu    sync.Mutex
	conns int               // connections opened so far
	asked []map[string]int  // per connection: question id → how many question.asked
	where map[string]string // question id → its session
	text  map[string]string // question id → its first question's text
}

// watchAsked follows base's /global/event until the test ends.
func watchAsked(t *testing.T, base string) *askedLog {
	t.Helper()
	l := &askedLog{where: make(map[string]string), text: make(map[string]string)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			l.follow(ctx, base+"/global/event")
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return l
}

// follow reads one connection of the stream until it ends.
func (l *askedLog) follow(ctx context.Context, url string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return
	}
	l.mu.Lock()
	l.conns++
	conn := len(l.asked)
	l.asked = append(l.asked, make(map[string]int))
	l.mu.Unlock()
	for f := range testkit.Frames(res.Body, 0) {
		var e struct {
			Payload struct {
				Type       string `json:"type"`
				Properties struct {
					ID        string `json:"id"`
					SessionID string `json:"sessionID"`
					Questions []struct {
						Question string `json:"question"`
					} `json:"questions"`
				} `json:"properties"`
			} `json:"payload"`
		}
		if json.Unmarshal([]byte(f.Data), &e) != nil || e.Payload.Type != "question.asked" {
			continue
		}
		p := e.Payload.Properties
		l.mu.Lock()
		l.asked[conn][p.ID]++
		l.where[p.ID] = p.SessionID
		if len(p.Questions) > 0 {
			l.text[p.ID] = p.Questions[0].Question
		}
		l.mu.Unlock()
	}
}

// connections is how many times the stream was opened so far.
func (l *askedLog) connections() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns
}

// waitConnections waits until the stream was opened n times.
func (l *askedLog) waitConnections(t *testing.T, n int) {
	t.Helper()
	testkit.Eventually(t, opencodeserve.TurnTimeout, fmt.Sprintf("the operator's stream opened %d times", n), func() bool {
		return l.connections() >= n
	})
}

// askedOnce fails the test unless the questions asked in session are
// exactly want (ids), each announced at most once on each connection
// (a reconnect replays a pending one: that is not asking it again).
func (l *askedLog) askedOnce(t *testing.T, session string, want ...string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var got []string
	for id, s := range l.where {
		if s == session {
			got = append(got, id)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("questions asked in session %s: %v (%v), want exactly %v", session, got, l.text, want)
	}
	for _, id := range want {
		if _, ok := l.where[id]; !ok {
			t.Fatalf("question %s was never announced; announced: %v", id, got)
		}
	}
	for conn, asked := range l.asked {
		for id, n := range asked {
			if n > 1 {
				t.Fatalf("connection %d of the operator's stream announced %s %d times", conn+1, id, n)
			}
		}
	}
}

// tuiStreams is how many event streams of the OpenCode TUI (the console's
// scope) questiond has opened, over all its starts, as its log says.
func (d *daemon) tuiStreams() int {
	d.t.Helper()
	data, err := os.ReadFile(d.logPath)
	if err != nil {
		d.t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		var entry struct{ Msg, Scope string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "event subscriber joined" && strings.HasSuffix(entry.Scope, "(console)") {
			n++
		}
	}
	return n
}

// waitTUIStreams waits until the TUI has opened n event streams in all:
// after a restart, that it connected again.
func (d *daemon) waitTUIStreams(n int) {
	d.t.Helper()
	testkit.Eventually(d.t, opencodeserve.TurnTimeout, fmt.Sprintf("the TUI's event stream opened %d times", n), func() bool {
		return d.tuiStreams() >= n
	})
}

// clientElicit asks form through the Go client as the agent whose token
// is token: it creates the question once (an Idempotency-Key makes a
// resent create the same question) and waits for its answer across
// questiond's restarts by polling its id.
func clientElicit(t *testing.T, base, token string, form map[string]any) <-chan elicitResult {
	t.Helper()
	agent, err := client.New(client.Options{Server: base, Token: token, PollWait: 2 * time.Second, MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := json.Marshal(form["requestedSchema"])
	if err != nil {
		t.Fatal(err)
	}
	session, _ := form["sessionID"].(string)
	message, _ := form["message"].(string)
	answer := make(chan elicitResult, 1)
	go func() {
		res, err := agent.Elicit(t.Context(), client.Params{SessionID: session, Message: message, RequestedSchema: schema})
		r := elicitResult{err: err}
		if err == nil {
			r.Action = res.Action
			raw, _ := json.Marshal(res.Content)
			r.err = json.Unmarshal(raw, &r.Content)
		}
		answer <- r
	}()
	return answer
}

// agentQuestionAcrossRestart has an agent ask twoQuestionForm in the
// overlay's session (ask), waits until the TUI shows it, restarts one of
// the servers (restart, named who) and then checks that the TUI connected
// again and still shows the question, the same one is pending, keys
// answer it, the agent gets the typed content, and the question was
// announced on no stream twice nor asked again.
func (o *overlay) agentQuestionAcrossRestart(t *testing.T, who string, ask func() <-chan elicitResult, restart func()) {
	t.Helper()
	asked := watchAsked(t, o.d.URL)
	asked.waitConnections(t, 1)

	answer := ask()
	id := o.d.waitPending(o.session, 1)[0].ID
	o.u.waitFor("agent-question", "Database", "Which database should we use?", panelHint)

	streams, conns := o.d.tuiStreams(), asked.connections()
	restart()
	o.d.waitTUIStreams(streams + 1)
	asked.waitConnections(t, conns+1)
	o.u.waitFor("after-restart", overlaySessionTitle, "Which database should we use?", panelHint)
	if got := o.d.waitPending(o.session, 1)[0].ID; got != id {
		t.Fatalf("after %s's restart the pending question is %s, want %s", who, got, id)
	}
	stillWaiting(t, answer)

	answerForm(t, o.u, answer)
	expectFormAnswer(t, answer, answerWithin, "across "+who+"'s restart the agent")
	o.u.waitGone("answered", panelHint)
	o.noneLeft(t)
	asked.askedOnce(t, o.session, id)
}

// The OpenCode server is killed and started again on its port while an
// agent's question in one of its sessions is on the TUI's screen: the
// TUI's stream through questiond ends, the TUI connects again once the
// server is back, the question is still there and keys answer it; the
// agent gets the typed content once, and the question was never asked
// again.
func TestOverlayUpstreamRestartWhileAgentQuestionShown(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it and the OpenCode TUI, and kills OpenCode")
	o := startOverlay(t)
	o.agentQuestionAcrossRestart(t, "OpenCode", func() <-chan elicitResult {
		return o.d.elicitAs(t.Context(), overlayToken, twoQuestionForm(o.session))
	}, o.oc.Restart)
}

// questiond is restarted (SIGTERM, the same bolt store) while an agent's
// question in one of OpenCode's sessions is on the TUI's screen: the TUI
// connects again, the question is announced again (not asked again), keys
// answer it, and the agent — the Go client, polling its question's id
// across the restart — gets the typed content.
func TestOverlayQuestiondRestartWhileAgentQuestionShown(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it and the OpenCode TUI, and restarts questiond")
	o := startOverlayWith(t, daemonOptions{durable: true})
	o.agentQuestionAcrossRestart(t, "questiond", func() <-chan elicitResult {
		return clientElicit(t, o.d.URL, overlayToken, twoQuestionForm(o.session))
	}, o.d.restart)
}

// answerRegion picks RegionOptions[1] in the TUI's panel of OpenCode's
// own question and checks that OpenCode's history holds its question
// tool completed with that answer.
func (o *overlay) answerRegion(t *testing.T) {
	t.Helper()
	o.u.pick(opencodeserve.RegionOptions[1])
	call := o.oc.ToolEnded(o.session, opencodeserve.QuestionTool)
	want := fmt.Sprintf("%q=%q", opencodeserve.RegionQuestion, opencodeserve.RegionOptions[1])
	if call.Status != "completed" || !strings.Contains(call.Output, want) {
		t.Fatalf("OpenCode's history holds its question tool's call %v; want it completed with %s", call, want)
	}
}

// OpenCode's own question (its model's call of its question tool) is on
// the TUI's screen when questiond restarts: the TUI connects again and
// keys still answer it, through the new questiond to OpenCode, whose
// history holds the answer.
func TestOverlayQuestiondRestartWhileOpencodeQuestionShown(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it and the OpenCode TUI, and restarts questiond")
	o := startOverlay(t)

	o.oc.PromptIn(o.session, opencodeserve.AskPrompt)
	o.regionPanel("opencode-question")

	streams := o.d.tuiStreams()
	o.d.restart()
	o.d.waitTUIStreams(streams + 1)
	o.regionPanel("after-questiond-restart")
	o.answerRegion(t)
	o.u.waitGone("answered", panelHint)
	o.noneLeft(t)
}

// OpenCode's own question arrives while an agent's question in the same
// session is on the TUI's screen: the TUI keeps showing the agent's until
// it is answered, then shows OpenCode's whole (its text and options, not
// the agent's form's state), and keys answer it into OpenCode's history.
func TestOverlayOpencodeQuestionWaitsForTheShownOne(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it and the OpenCode TUI")
	o := startOverlay(t)

	answer := o.d.elicitAs(t.Context(), overlayToken, twoQuestionForm(o.session))
	o.d.waitPending(o.session, 1)
	o.u.waitFor("agent-question", "Database", "Which database should we use?", panelHint)

	o.oc.PromptIn(o.session, opencodeserve.AskPrompt)
	// Both are pending now, as operators list them; the TUI goes on
	// showing the agent's.
	o.d.waitPending(o.session, 2)
	screen := o.u.shot("both-pending")
	if strings.Contains(screen, opencodeserve.RegionQuestion) || !strings.Contains(screen, "Which database should we use?") {
		t.Fatalf("with OpenCode's question pending behind the agent's, the TUI shows:\n%s", trimScreen(screen))
	}

	answerForm(t, o.u, answer)
	expectFormAnswer(t, answer, answerWithin, "the agent asking in OpenCode's session")
	o.regionPanel("opencode-question-after")
	o.answerRegion(t)
	o.u.waitGone("answered", panelHint)
	o.noneLeft(t)
}

// questiond restarts while OpenCode's own two-question form is on the
// TUI's screen and an agent's one question of the same session waits
// behind it: once OpenCode's form is answered (its review tab the last one
// shown), the agent's question shows whole — its text and options, not
// the review tab's state — and keys answer it.
func TestOverlayQuestiondRestartBehindOpencodeForm(t *testing.T) {
	testenv.Heavy(t, "runs OpenCode, questiond --upstream in front of it and the OpenCode TUI, and restarts questiond")
	o := startOverlayWith(t, daemonOptions{durable: true})

	o.oc.PromptIn(o.session, opencodeserve.AskTwoPrompt)
	o.regionPanel("opencode-form")
	answer := clientElicit(t, o.d.URL, overlayToken, booleanQuestion(o.session, "Before the release.", "Rotate the keys?"))
	o.d.waitPending(o.session, 2)

	streams := o.d.tuiStreams()
	o.d.restart()
	o.d.waitTUIStreams(streams + 1)
	o.d.waitPending(o.session, 2)
	o.regionPanel("after-questiond-restart")
	o.u.pick(opencodeserve.RegionOptions[1])
	o.u.waitFor("window", opencodeserve.WindowQuestion, opencodeserve.WindowOptions[0])
	o.u.pick(opencodeserve.WindowOptions[0])
	o.u.waitFor("review", "Review")
	o.u.keys("Enter")
	call := o.oc.ToolEnded(o.session, opencodeserve.QuestionTool)
	if call.Status != "completed" || !strings.Contains(call.Output, opencodeserve.WindowOptions[0]) {
		t.Fatalf("OpenCode's history holds its question tool's call %v; want it completed with %s", call, opencodeserve.WindowOptions[0])
	}
	o.u.waitFor("agent-question", "Rotate the keys?", "Yes", panelHint)
	o.u.pick("Yes")
	if got := await(t, answer, answerWithin); got.Action != "accept" || got.Content["ok"] != true {
		t.Fatalf("the agent got %s %v, want accept ok=true", got.Action, got.Content)
	}
	o.u.waitGone("answered", panelHint)
	o.noneLeft(t)
}
