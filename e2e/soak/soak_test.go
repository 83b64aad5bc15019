// Package soak runs the real questiond binary with two agents for a while:
// bravo attacks it every way issue 22 found at once, alpha only asks and
// gets answers, and an operator watches. It is the acceptance soak of issue
// 22: no agent can hurt another agent or the operators.
package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
)

const (
	// attackDuration is how long bravo attacks while alpha asks. With the
	// start and the shutdown the test takes about 40 s, which `make test`
	// can afford.
	attackDuration = 30 * time.Second

	stalledConns = 4000 // bravo's connections that never finish a request
	// stallRedial is how soon bravo opens a stalled connection again after
	// questiond closed it. Questiond closes most of them at once (they are
	// over its per-address and per-agent caps), so this sets the rate of a
	// reconnection storm (about stalledConns/stallRedial) that both
	// processes pay for on the same two cores.
	stallRedial = 3 * time.Second
	// stallSources is how many loopback addresses bravo's anonymous stalled
	// connections come from: 16 × --max-connections-per-address (256) is
	// more than --max-connections (maxConnections).
	stallSources   = 16
	mcpInitializes = 1000 // bravo's MCP initialize calls
	// mcpDeadline bounds the time bravo's MCP calls may take: 15-30 s on
	// the 2-core machine this was written on under the whole attack, 60 s
	// when other work there made it ten times oversubscribed (load average
	// 20); beyond 90 s questiond has stopped answering bravo.
	mcpDeadline  = 90 * time.Second
	bigWorkers   = 2 // bravo's goroutines asking 1 MB questions that stay pending
	churnWorkers = 2 // bravo's goroutines asking 1 MB questions and deleting them at once

	// The budgets the daemon runs with, which the RSS bound is derived from.
	maxBody            = 1 << 20 // --max-body (its default)
	maxPendingPerAgent = 8       // --max-pending-per-agent
	maxRetained        = 32      // --max-retained: above what the byte budget lets bravo keep
	shutdownTimeout    = 10 * time.Second
	// maxConnections (--max-connections) is below stalledConns, so that the
	// stalled connections meet the cap for sure and questiond must choose
	// whom to close; alpha and the operator must still get in (the operator
	// has --operator-reserved-connections).
	maxConnections = 3072

	// A held stalled connection costs questiond a goroutine (8 KiB stack,
	// grown to 16 KiB by the read path), a 4 KiB bufio.Reader, a 4 KiB
	// bufio.Writer (allocated when the handler runs), the net.Conn and
	// connguard's record: 32 KiB per connection is a round upper bound. The
	// issue measured ~20 KiB (4 000 held ~78 MB).
	perConnection = 32 << 10
	// maxBytesPerAgent (--max-bytes-per-agent) is what bravo's pending
	// questions and retained results may weigh together: below what
	// --max-pending-per-agent and --max-retained let it keep (about 56 MiB:
	// a pending 1 MB question weighs about 3 MiB, its message once and its
	// question text, which begins with the message, twice; a result about
	// 1 MiB), so that bravo runs into its byte budget: its pending questions
	// take about 18 MiB of it, and its churn must forget its own oldest
	// results to go on.
	maxBytesPerAgent = 40 << 20
	// The budget weighs the text the store keeps; resident memory also
	// holds its JSON encoding in the store (bbolt's pages are
	// memory-mapped, so they count in RSS) and the garbage of records just
	// forgotten: copiesOfBudget = 3 covers them.
	copiesOfBudget = 3
	// A request body in flight is read (1 copy), decoded (1 copy) and
	// checked (1 copy) before it is stored.
	copiesPerBody = 3
	// baseRSS is questiond at rest (~20 MB) plus the Go heap's room to grow
	// before the collector runs (GOGC=100 doubles the live heap): the live
	// data below is counted once more for it in rssBound.
	baseRSS = 64 << 20
)

// rssBound is the most resident memory questiond may use during the soak:
// its base, the stalled connections, the questions bravo's byte budget
// lets it keep (pending and retained; alpha's are negligible) and the
// bodies of bravo's requests in flight, the live part doubled for the
// collector's headroom.
func rssBound() int64 {
	questions := int64(maxBytesPerAgent) * copiesOfBudget
	inFlight := int64(bigWorkers+churnWorkers) * maxBody * copiesPerBody
	live := int64(stalledConns)*perConnection + questions + inFlight
	return baseRSS + 2*live
}

const (
	alphaToken       = "alpha-token-0123456789abcdef"
	bravoToken       = "bravo-token-0123456789abcdef"
	operatorPassword = "operator-password-0123456789"
)

// The form alpha asks, and the answer the operator gives.
const (
	alphaForm   = `{"message":"alpha round %d: deploy?","requestedSchema":{"type":"object","properties":{"go":{"type":"string","enum":["yes","no"]}},"required":["go"]}}`
	alphaAnswer = `{"answers":[["yes"]]}`
)

// roundTripTimeout bounds each step of alpha's round trip, and
// listTimeout each operator GET /question. The machine this runs on may be
// shared and loaded (2 cores, -race, a daemon under attack): a step that
// takes this long is not slow but stuck, which is what the soak looks for.
// Measured on a 2-core machine ten times oversubscribed by other work: a
// whole round trip at most 9 s; a list, which carries bravo's pending
// 1 MB questions (14 MB), up to 24 s.
const (
	roundTripTimeout = 30 * time.Second
	listTimeout      = 60 * time.Second
)

// TestSoakHostileAgentHurtsNobody runs questiond with two agents: bravo
// sends 1 MB questions as fast as the rate limit and the budgets let it,
// creates and deletes 1 MB questions in a loop, calls MCP initialize 1 000
// times and holds 4 000 connections that never finish a request, all at
// once for attackDuration; meanwhile alpha asks one question after another
// and the operator, on its /global/event stream, sees each one and replies.
// Every one of alpha's round trips must succeed, the operator's stream and
// GET /question must keep answering, questiond's RSS must stay under
// rssBound, and SIGTERM (sent while bravo still attacks) must end it with
// status 0 within --shutdown-timeout.
func TestSoakHostileAgentHurtsNobody(t *testing.T) {
	testenv.Heavy(t, "a one-minute soak of the real binary")
	raiseOpenFileLimit(t, 2*stalledConns+1024)

	cmd := exec.Command(testkit.Binary(t), "--addr", "127.0.0.1:0", "--log-format", "json",
		"--log-level", "info", // not debug: every refusal logged would be most of the test's memory
		"--store", "bolt", "--data-dir", t.TempDir(), "--metrics-addr", "off",
		"--max-body", strconv.Itoa(maxBody),
		"--max-pending-per-agent", strconv.Itoa(maxPendingPerAgent),
		"--max-retained", strconv.Itoa(maxRetained),
		"--max-bytes-per-agent", strconv.Itoa(maxBytesPerAgent),
		"--shutdown-timeout", shutdownTimeout.String(),
		"--max-connections", strconv.Itoa(maxConnections),
	)
	cmd.Env = append(os.Environ(),
		"QUESTIOND_AGENT_TOKENS=alpha="+alphaToken+",bravo="+bravoToken,
		"QUESTIOND_OPERATOR_PASSWORD="+operatorPassword)
	d := testkit.Launch(t, cmd, launch.Options{Name: "soak"})
	pid := d.Pid()
	if got := childOpenFileLimit(t, pid); got < 2*stalledConns {
		t.Fatalf("questiond may open %d files; the soak needs room for %d stalled connections and everyone else", got, stalledConns)
	}
	addr := strings.TrimPrefix(d.URL, "http://")

	mem := watchMemory(t, pid)
	operator := newClient(func(r *http.Request) { r.SetBasicAuth("opencode", operatorPassword) })
	events := followEvents(t, operator, d.URL)

	// The attack lasts attackDuration, or until bravo's MCP calls are all
	// made if that takes longer (at most mcpDeadline): on a slow machine
	// the attack is longer, not weaker.
	ctx, stopAttack := context.WithCancel(context.Background())
	defer stopAttack()
	mcpCtx, stopMCP := context.WithTimeout(ctx, mcpDeadline)
	defer stopMCP()
	mcpDone := make(chan struct{})
	go func() {
		pause(ctx, attackDuration)
		<-mcpDone
		stopAttack()
	}()
	// The stalled connections outlive the attack: they are still held when
	// SIGTERM comes.
	stallCtx, stopStalling := context.WithCancel(context.Background())
	var stalls sync.WaitGroup
	stalled := holdStalledConnections(stallCtx, &stalls, addr)
	defer func() { stopStalling(); stalls.Wait() }()

	bravo := newClient(bearer(bravoToken))
	var attacks sync.WaitGroup
	tally := &statusTally{counts: map[string]int{}, slowest: map[string]time.Duration{}}
	var bigHeld atomic.Int64
	for range bigWorkers {
		attacks.Go(func() { askBig(ctx, bravo, d.URL, &bigHeld, tally) })
	}
	for range churnWorkers {
		attacks.Go(func() { churn(ctx, bravo, d.URL, tally) })
	}
	attacks.Go(func() { initializeMCP(mcpCtx, bravo, d.URL, tally); close(mcpDone) })

	listed := make(chan error, 1)
	go func() { listed <- pollQuestions(t, ctx, operator, d.URL) }()

	alpha := newClient(bearer(alphaToken))
	attackStart := time.Now()
	rounds, slowest := 0, time.Duration(0)
	for ctx.Err() == nil {
		start := time.Now()
		if err := roundTrip(alpha, operator, d.URL, events, rounds); err != nil {
			t.Errorf("alpha's round trip %d (%s into the attack): %v", rounds, time.Since(start), err)
			break
		}
		slowest = max(slowest, time.Since(start))
		rounds++
		// Alpha is honest: a few round trips a second keep it far under
		// --rate-limit whatever bravo does.
		time.Sleep(100 * time.Millisecond)
	}
	attacks.Wait()
	if err := <-listed; err != nil {
		t.Errorf("operator's GET /question: %v", err)
	}
	if err := events.broken(); err != nil {
		t.Errorf("operator's /global/event: %v", err)
	}
	t.Logf("alpha: %d round trips, slowest %s", rounds, slowest)
	t.Logf("bravo: %s", tally)
	t.Logf("stalled connections: %s", stalled)
	t.Logf("the attack lasted %s", time.Since(attackStart))
	// Alpha's round trips are what the soak checks: with fewer than a
	// handful it checked nothing (each takes well under a second on an idle
	// machine, a few seconds under this attack on a loaded one).
	if rounds < 5 {
		t.Errorf("alpha made only %d round trips in %s", rounds, time.Since(attackStart))
	}
	if n := stalled.peak.Load(); n < stalledConns/2 {
		t.Errorf("bravo held at most %d stalled connections; the soak wants about %d open at once", n, stalledConns)
	}
	if tally.get("mcp initialize") < mcpInitializes {
		t.Errorf("bravo's MCP initialize calls answered: %d, want %d", tally.get("mcp initialize"), mcpInitializes)
	}
	// Bravo holds every MCP session its own cap allows
	// (--max-mcp-sessions-per-agent): alpha still opens one.
	code, body, err := mcpInitialize(context.Background(), alpha, d.URL, "alpha")
	if err != nil || code != http.StatusOK {
		t.Errorf("alpha's MCP initialize after bravo's 1 000: %d %.200s %v, want 200", code, body, err)
	}

	// SIGTERM while bravo's stalled connections are still held.
	start := time.Now()
	if err := d.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Exited():
	case <-time.After(shutdownTimeout + 5*time.Second):
		t.Fatalf("questiond did not exit within %s of SIGTERM (--shutdown-timeout %s)", time.Since(start), shutdownTimeout)
	}
	took := time.Since(start)
	t.Logf("SIGTERM to exit: %s, status %v; questiond used %s of CPU", took, cmd.ProcessState, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("questiond exited with status %d after SIGTERM, want 0", code)
	}
	if took > shutdownTimeout {
		t.Errorf("questiond took %s to exit after SIGTERM, more than --shutdown-timeout %s", took, shutdownTimeout)
	}

	peak := mem.stop()
	t.Logf("questiond memory: %s; bound %d MiB", peak, rssBound()>>20)
	if peak.hwm > rssBound() {
		t.Errorf("questiond's peak RSS was %d MiB, over the bound of %d MiB derived from its budgets", peak.hwm>>20, rssBound()>>20)
	}
}

// roundTrip is one of alpha's questions: alpha creates it, the operator
// sees it on its event stream and replies, and alpha's long-poll gets the
// reply.
func roundTrip(alpha, operator *http.Client, base string, events *eventFollower, n int) error {
	code, body, err := call(alpha, http.MethodPost, base+"/elicitations", fmt.Sprintf(alphaForm, n))
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("create: %d %s %v", code, body, err)
	}
	var q struct{ ID string }
	if err := json.Unmarshal([]byte(body), &q); err != nil || q.ID == "" {
		return fmt.Errorf("create answered %s", body)
	}
	type result struct {
		code int
		body string
		err  error
	}
	waited := make(chan result, 1)
	go func() {
		// Long enough to outlast the announcement and the reply.
		code, body, err := call(alpha, http.MethodGet, base+"/elicitations/"+q.ID+"?wait=60s", "")
		waited <- result{code, body, err}
	}()
	select {
	case <-events.asked(q.ID):
	case <-time.After(roundTripTimeout):
		return fmt.Errorf("the operator's /global/event did not announce %s within %s", q.ID, roundTripTimeout)
	}
	if code, body, err := call(operator, http.MethodPost, base+"/question/"+q.ID+"/reply", alphaAnswer); err != nil || code != http.StatusOK {
		return fmt.Errorf("operator's reply to %s: %d %s %v", q.ID, code, body, err)
	}
	var got result
	select {
	case got = <-waited:
	case <-time.After(70 * time.Second):
		return fmt.Errorf("alpha's wait for %s never returned", q.ID)
	}
	var e struct {
		Ending string
		Result struct {
			Action  string
			Content map[string]any
		}
	}
	if got.err != nil || got.code != http.StatusOK || json.Unmarshal([]byte(got.body), &e) != nil {
		return fmt.Errorf("alpha's wait for %s: %d %s %v", q.ID, got.code, got.body, got.err)
	}
	if e.Result.Action != "accept" || e.Ending != "replied" || e.Result.Content["go"] != "yes" {
		return fmt.Errorf("alpha's wait for %s got %s; want the operator's reply", q.ID, got.body)
	}
	return nil
}

// pollQuestions is the operator's GET /question every two seconds until ctx
// ends; every one must answer 200 within listTimeout.
func pollQuestions(t *testing.T, ctx context.Context, operator *http.Client, base string) error {
	n, slowest, slowestFirstByte, biggest := 0, time.Duration(0), time.Duration(0), 0
	for ctx.Err() == nil {
		start := time.Now()
		var firstByte time.Duration
		trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { firstByte = time.Since(start) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, base+"/question", nil)
		if err != nil {
			return err
		}
		code, body, err := do(operator, req)
		took := time.Since(start)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("after %d lists: %d %.200s %v", n, code, body, err)
		}
		if took > listTimeout {
			return fmt.Errorf("a list took %s (its first byte %s, %d bytes)", took, firstByte, len(body))
		}
		slowest, slowestFirstByte, biggest = max(slowest, took), max(slowestFirstByte, firstByte), max(biggest, len(body))
		n++
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	t.Logf("operator: %d GET /question, slowest %s (first byte %s), biggest %d MiB", n, slowest, slowestFirstByte, biggest>>20)
	// A handful of lists shows the operator could list all along; each
	// carries bravo's pending 1 MB questions, so fewer fit in the attack
	// than alpha's round trips.
	if n < 3 {
		return fmt.Errorf("only %d lists answered", n)
	}
	return nil
}

// bigMessage is a question that fills --max-body.
var bigMessage = func() string {
	const form = `{"message":"%s","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`
	return fmt.Sprintf(form, strings.Repeat("x", maxBody-len(form)))
}()

// askBig asks 1 MB questions and leaves them pending, as fast as questiond
// lets it, until bravo holds all of --max-pending-per-agent but the room
// churn needs; a refusal (429 at the rate limit) is retried at once.
func askBig(ctx context.Context, bravo *http.Client, base string, held *atomic.Int64, tally *statusTally) {
	for ctx.Err() == nil {
		if held.Add(1) > maxPendingPerAgent-churnWorkers {
			held.Add(-1)
			pause(ctx, 100*time.Millisecond)
			continue
		}
		start := time.Now()
		code, _, err := call(bravo, http.MethodPost, base+"/elicitations", bigMessage)
		tally.add("big create", time.Since(start), code, err)
		if code != http.StatusCreated {
			held.Add(-1)
			pause(ctx, 10*time.Millisecond)
		}
	}
}

// churn asks 1 MB questions and deletes each at once.
func churn(ctx context.Context, bravo *http.Client, base string, tally *statusTally) {
	for ctx.Err() == nil {
		start := time.Now()
		code, body, err := call(bravo, http.MethodPost, base+"/elicitations", bigMessage)
		tally.add("churn create", time.Since(start), code, err)
		var q struct{ ID string }
		if code != http.StatusCreated || json.Unmarshal([]byte(body), &q) != nil {
			pause(ctx, 10*time.Millisecond)
			continue
		}
		// A DELETE on a keep-alive connection that questiond has just
		// closed (bravo is over its connection cap) fails; bravo retries so
		// that its churn goes on.
		for try := 0; try < 3 && ctx.Err() == nil; try++ {
			start = time.Now()
			code, _, err = call(bravo, http.MethodDelete, base+"/elicitations/"+q.ID, "")
			tally.add("churn delete", time.Since(start), code, err)
			if err == nil {
				break
			}
		}
	}
}

// initializeMCP makes mcpInitializes MCP initialize calls that questiond
// answers, 16 at a time, retrying those refused by the rate limit and
// those lost with a connection questiond closed (bravo is over its
// connection caps): bravo opens every session its own cap
// (--max-mcp-sessions-per-agent) allows, and is refused the rest.
func initializeMCP(ctx context.Context, bravo *http.Client, base string, tally *statusTally) {
	var left atomic.Int64
	left.Store(mcpInitializes)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil && left.Add(-1) >= 0 {
				for ctx.Err() == nil {
					start := time.Now()
					code, body, err := mcpInitialize(ctx, bravo, base, "bravo")
					if code >= 500 {
						tally.note(fmt.Sprintf("mcp initialize %d: %.160s", code, body))
					}
					if code == http.StatusTooManyRequests && strings.Contains(body, "--max-mcp-sessions-per-agent") {
						// Answered: bravo holds all the sessions its cap allows.
						tally.add("mcp initialize", time.Since(start), code, err)
						break
					}
					if err != nil || code == http.StatusTooManyRequests {
						tally.add("mcp initialize retried", time.Since(start), code, err)
						pause(ctx, 50*time.Millisecond)
						continue
					}
					tally.add("mcp initialize", time.Since(start), code, err)
					break
				}
			}
		})
	}
	wg.Wait()
}

// mcpInitialize opens an MCP session on /mcp with a raw JSON-RPC
// initialize, as client (whose transport adds the token) named name.
func mcpInitialize(ctx context.Context, client *http.Client, base, name string) (int, string, error) {
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"` + name + `","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(initialize))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return do(client, req)
}

// stallStats counts bravo's stalled connections.
type stallStats struct {
	held, peak, opened, closedByServer, dialFailed atomic.Int64
}

func (s *stallStats) String() string {
	return fmt.Sprintf("peak %d held at once, %d opened, %d closed by questiond, %d dials failed",
		s.peak.Load(), s.opened.Load(), s.closedByServer.Load(), s.dialFailed.Load())
}

// holdStalledConnections keeps stalledConns connections open that never
// finish a request, of three kinds: bravo's request with a body that never
// comes (questiond waits up to --body-read-timeout), headers that never
// end, and nothing at all. The anonymous ones come from stallSources
// loopback addresses (all of 127.0.0.0/8 is this machine), so that
// --max-connections-per-address does not stop them and --max-connections
// is what they meet. A connection questiond closes is opened again after
// stallRedial, as an attacker would.
func holdStalledConnections(ctx context.Context, wg *sync.WaitGroup, addr string) *stallStats {
	s := &stallStats{}
	openings := []string{
		"POST /elicitations HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + bravoToken + "\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n",
		"GET /question HTTP/1.1\r\nHost: " + addr + "\r\n",
		"",
	}
	for i := range stalledConns {
		wg.Go(func() {
			for ctx.Err() == nil {
				from := net.IPv4(127, 0, 0, 1)
				if kind := i % len(openings); kind != 0 {
					from = net.IPv4(127, 0, 1, byte(1+i%stallSources))
				}
				stallOnce(ctx, s, from, addr, openings[i%len(openings)])
				pause(ctx, stallRedial)
			}
		})
	}
	return s
}

func stallOnce(ctx context.Context, s *stallStats, from net.IP, addr, opening string) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: from}}).DialContext(ctx, "tcp", addr)
	if err != nil {
		s.dialFailed.Add(1)
		return
	}
	defer c.Close()
	if _, err := io.WriteString(c, opening); err != nil {
		return
	}
	s.opened.Add(1)
	n := s.held.Add(1)
	defer s.held.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	// Read until questiond closes the connection, waking each second to see
	// whether the attack is over: no second goroutine per connection (the
	// race detector allows 8 128 at once, and there are stalledConns of
	// these).
	buf := make([]byte, 512)
	for ctx.Err() == nil {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, err := c.Read(buf)
		var ne net.Error
		switch {
		case err == nil, errors.As(err, &ne) && ne.Timeout():
		default:
			s.closedByServer.Add(1)
			return
		}
	}
}

// eventFollower reads the operator's /global/event stream and remembers
// which questions it announced.
type eventFollower struct {
	mu    sync.Mutex
	seen  map[string]chan struct{}
	err   error
	ended bool
}

// followEvents opens the operator's /global/event stream for the whole
// test.
func followEvents(t *testing.T, operator *http.Client, base string) *eventFollower {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/global/event", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The stream has no overall timeout; the operator's client's would cut it.
	stream := &http.Client{Transport: operator.Transport}
	res, err := stream.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("operator's /global/event: %d", res.StatusCode)
	}
	t.Cleanup(func() { res.Body.Close() })
	f := &eventFollower{seen: map[string]chan struct{}{}}
	go f.read(res.Body)
	return f
}

func (f *eventFollower) read(body io.Reader) {
	r := bufio.NewReaderSize(body, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// An announcement of one of bravo's 1 MB questions: skip the
			// rest of the line; alpha's are small.
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			f.mu.Lock()
			f.ended, f.err = true, err
			f.mu.Unlock()
			return
		}
		data, ok := strings.CutPrefix(string(line), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Payload struct {
				Type       string
				Properties struct{ ID string }
			}
		}
		if json.Unmarshal([]byte(data), &e) == nil && e.Payload.Type == "question.asked" {
			if c := f.asked(e.Payload.Properties.ID); !isClosed(c) {
				close(c)
			}
		}
	}
}

// asked is closed once the stream has announced question id.
func (f *eventFollower) asked(id string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.seen[id]
	if !ok {
		c = make(chan struct{})
		f.seen[id] = c
	}
	return c
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// broken says why the stream ended, if it did.
func (f *eventFollower) broken() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return fmt.Errorf("the stream ended during the soak: %v", f.err)
	}
	return nil
}

// memory is what /proc/<pid>/status said of questiond's memory.
type memory struct {
	hwm, rss, anon, file int64 // bytes; rss, anon and file at the sample of the highest rss
}

func (m memory) String() string {
	return fmt.Sprintf("peak RSS (VmHWM) %d MiB; highest sampled VmRSS %d MiB (anonymous %d MiB, file-backed %d MiB)", m.hwm>>20, m.rss>>20, m.anon>>20, m.file>>20)
}

type memoryWatch struct {
	stop func() memory
}

// watchMemory samples questiond's memory every 100 ms; stop returns the
// highest sample and the kernel's own peak (VmHWM, which catches what
// happens between samples) as last read while the process was alive.
func watchMemory(t *testing.T, pid int) memoryWatch {
	t.Helper()
	if _, err := readMemory(pid); err != nil {
		t.Fatalf("reading questiond's memory: %v", err)
	}
	done := make(chan struct{})
	result := make(chan memory, 1)
	go func() {
		var peak memory
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			m, err := readMemory(pid)
			if err == nil {
				if m.rss > peak.rss {
					peak.rss, peak.anon, peak.file = m.rss, m.anon, m.file
				}
				peak.hwm = max(peak.hwm, m.hwm)
			}
			select {
			case <-done:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var peak memory
	return memoryWatch{stop: func() memory {
		once.Do(func() { close(done); peak = <-result })
		return peak
	}}
}

func readMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for line := range strings.Lines(string(data)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmHWM":
			m.hwm = kb << 10
		case "VmRSS":
			m.rss = kb << 10
		case "RssAnon":
			m.anon = kb << 10
		case "RssFile":
			m.file = kb << 10
		}
	}
	if m.rss == 0 {
		return m, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return m, nil
}

// raiseOpenFileLimit raises this process's open-file limit to its hard
// limit, which questiond (its child) inherits; both ends of every stalled
// connection live on this machine. Without room for need files the soak
// cannot run.
func raiseOpenFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < need {
		testenv.Missing(t, fmt.Sprintf("an open-file limit of %d (the hard limit is %d)", need, lim.Max), "raise it with ulimit -Hn or in limits.conf")
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// childOpenFileLimit is questiond's soft open-file limit.
func childOpenFileLimit(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if n, err := strconv.Atoi(strings.Fields(rest)[0]); err == nil {
				return n
			}
		}
	}
	t.Fatalf("no open-file limit in /proc/%d/limits:\n%s", pid, data)
	return 0
}

// statusTally counts bravo's answers by what was asked and the status.
type statusTally struct {
	mu      sync.Mutex
	counts  map[string]int
	slowest map[string]time.Duration
	errors  []string // the first few transport errors and odd answers
}

func (s *statusTally) add(what string, took time.Duration, code int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[what]++
	s.slowest[what] = max(s.slowest[what], took)
	key := fmt.Sprintf("%s %d", what, code)
	if err != nil {
		key = what + " error"
		if len(s.errors) < 5 {
			s.errors = append(s.errors, what+": "+err.Error())
		}
	}
	s.counts[key]++
}

// note keeps one of the first few odd answers, to log.
func (s *statusTally) note(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errors) < 10 {
		s.errors = append(s.errors, what)
	}
}

func (s *statusTally) get(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[what]
}

func (s *statusTally) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(s.counts)
	return fmt.Sprintf("%s; slowest %v; first errors and odd answers: %q", b, s.slowest, s.errors)
}

// newClient is an HTTP client whose requests set is applied to, with its
// own connections and an overall timeout of listTimeout plus the
// longest long-poll alpha makes.
func newClient(set func(*http.Request)) *http.Client {
	return &http.Client{
		Timeout:   listTimeout + 30*time.Second,
		Transport: &authTransport{set: set, next: &http.Transport{MaxIdleConnsPerHost: 16}},
	}
}

type authTransport struct {
	set  func(*http.Request)
	next http.RoundTripper
}

func (a *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	a.set(r)
	return a.next.RoundTrip(r)
}

func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

// call sends a request with a JSON body (none: "") and returns the status
// and the body.
func call(c *http.Client, method, url, body string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return do(c, req)
}

func do(c *http.Client, req *http.Request) (int, string, error) {
	res, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res.StatusCode, string(data), err
}

// pause waits d unless ctx ends first.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
