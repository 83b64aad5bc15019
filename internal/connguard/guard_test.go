package connguard_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
	"github.com/questiond/questiond/internal/testserver"
)

// Leaks this guards: connections the Guard closes or refuses, and the
// server's goroutines for them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	alphaToken = "alpha-token-0123456789"
	bravoToken = "bravo-token-0123456789"
	password   = "operator-password"
	form       = `{"message":"Which model?","requestedSchema":{"type":"object","properties":{"model":{"type":"string","enum":["SY215C","SY365H"]}}}}`
)

func start(t *testing.T, cfg testserver.Config) *testserver.Server {
	t.Helper()
	cfg.Logger = zaptest.NewLogger(t)
	cfg.Events = sse.Options{Heartbeat: time.Hour}
	return testkit.Serve(t, cfg)
}

func withCredentials() httpapi.Options {
	return httpapi.Options{Auth: httpapi.Auth{
		OperatorPassword: password,
		AgentTokens:      map[string]string{"alpha": alphaToken, "bravo": bravoToken},
	}}
}

func operatorAuth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("opencode:"+password))
}

// rawRequest opens a connection and writes text on it, as a slow or
// hostile client does.
func rawRequest(t *testing.T, addr, text string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := io.WriteString(conn, text); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readUntilClosed reads what the server sends until it closes the
// connection; closed is false when the connection was still open at the
// deadline.
func readUntilClosed(conn net.Conn, within time.Duration) (got string, closed bool) {
	_ = conn.SetReadDeadline(time.Now().Add(within))
	data, err := io.ReadAll(conn)
	return string(data), err == nil || errors.Is(err, syscall.ECONNRESET)
}

// do sends a request on a connection of its own.
func do(t *testing.T, method, url, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Close = true
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

func head(s *testserver.Server, method, path, auth string, contentLength int) string {
	h := method + " " + path + " HTTP/1.1\r\nHost: " + s.Addr + "\r\n"
	if auth != "" {
		h += "Authorization: " + auth + "\r\n"
	}
	if contentLength > 0 {
		h += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(contentLength) + "\r\n"
	}
	return h + "\r\n"
}

// A body that stops arriving is cut after --body-read-timeout: the client
// gets 408 naming the flag, and the connection is closed.
func TestAStalledBodyIsCutAfterTheBodyReadTimeout(t *testing.T) {
	t.Parallel()
	s := start(t, testserver.Config{Conns: connguard.Options{BodyReadTimeout: 300 * time.Millisecond}})
	began := time.Now()
	conn := rawRequest(t, s.Addr, head(s, http.MethodPost, "/elicitations", "", 100)+`{"message":`)
	got, closed := readUntilClosed(conn, 5*time.Second)
	if !closed {
		t.Fatalf("the connection with a stalled body is still open after 5s; read %q", got)
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Errorf("cut after %s, before the body read timeout", took)
	}
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, "--body-read-timeout") {
		t.Errorf("answer to a stalled body: %q; want 408 naming --body-read-timeout", got)
	}
}

// A refusal given before the body is read (here 401) is sent at once with
// Connection: close, and the connection is closed without waiting for the
// body.
func TestARefusalClosesTheConnectionWithoutWaitingForTheBody(t *testing.T) {
	api := withCredentials()
	s := start(t, testserver.Config{API: api, Conns: connguard.Options{BodyReadTimeout: time.Minute}})
	for name, req := range map[string]string{
		"401 without credentials": head(s, http.MethodPost, "/elicitations", "", 100) + `{"message":`,
		"415 of a form body": strings.Replace(head(s, http.MethodPost, "/elicitations", "Bearer "+alphaToken, 100),
			"application/json", "application/x-www-form-urlencoded", 1) + "message=",
	} {
		t.Run(name, func(t *testing.T) {
			conn := rawRequest(t, s.Addr, req)
			got, closed := readUntilClosed(conn, 3*time.Second)
			if !closed {
				t.Fatalf("the connection is still open 3s after the refusal; read %q", got)
			}
			if !strings.HasPrefix(got, "HTTP/1.1 4") || !strings.Contains(got, "Connection: close") {
				t.Errorf("refusal: %q; want a 4xx with Connection: close", got)
			}
		})
	}
}

// Event streams, POST /elicit's long wait and ?wait= long-polls read no
// body after their request: they live well past --body-read-timeout.
func TestStreamsAndLongWaitsOutliveTheBodyReadTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	s := start(t, testserver.Config{
		API:   httpapi.Options{KeepAlive: 50 * time.Millisecond},
		Conns: connguard.Options{BodyReadTimeout: timeout},
	})
	stream, err := http.Get(s.URL + "/global/event")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := testkit.Data(stream.Body, 16)
	answer := make(chan string, 1)
	go func() {
		res, err := http.Post(s.URL+"/elicit", "application/json", strings.NewReader(form))
		if err != nil {
			answer <- err.Error()
			return
		}
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		answer <- res.Status + " " + strings.TrimSpace(string(data)) + errString(err)
	}()
	id := ""
	for id == "" {
		line, ok := <-events
		if !ok {
			t.Fatal("the event stream ended before question.asked")
		}
		if strings.Contains(line, `"question.asked"`) {
			var ev struct {
				Payload struct {
					Properties struct{ ID string } `json:"properties"`
				} `json:"payload"`
			}
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data:")), &ev)
			id = ev.Payload.Properties.ID
			if id == "" {
				t.Fatalf("no question id in %s", line)
			}
		}
	}
	poll := make(chan string, 1)
	go func() {
		res, err := http.Get(s.URL + "/elicitations/" + id + "?wait=60")
		if err != nil {
			poll <- err.Error()
			return
		}
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		poll <- res.Status + " " + string(data) + errString(err)
	}()
	time.Sleep(20 * timeout) // every one of them has outlived the body deadline many times
	if status, body := do(t, http.MethodPost, s.URL+"/question/"+id+"/reply", "", `{"answers":[["SY365H"]]}`); status != http.StatusOK {
		t.Fatalf("reply: %d %s", status, body)
	}
	for name, ch := range map[string]chan string{"POST /elicit": answer, "GET ?wait=": poll} {
		select {
		case got := <-ch:
			if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "SY365H") {
				t.Errorf("%s after the wait: %s", name, got)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s did not answer after the reply", name)
		}
	}
	for {
		select {
		case line, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended before question.replied")
			}
			if strings.Contains(line, `"question.replied"`) {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no question.replied on the stream")
		}
	}
}

func errString(err error) string {
	if err != nil {
		return " (" + err.Error() + ")"
	}
	return ""
}

// stalled opens n connections that send part of a request head and then
// nothing, as the 4 000 did.
func stalled(t *testing.T, s *testserver.Server, n int) []net.Conn {
	t.Helper()
	var files syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &files); err == nil && uint64(n)+512 > files.Cur {
		t.Skipf("the open-file limit (%d) is too low for %d connections", files.Cur, n)
	}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "POST /elicitations HTTP/1.1\r\nHost: "+s.Addr+"\r\n")
	}
	return conns
}

// stillOpen counts the connections the server has not closed.
func stillOpen(conns []net.Conn) int {
	open := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		}
	}
	return open
}

// 4 000 stalled connections from the operators' own address hold at most
// --max-connections of the server, and the operator's GET /question and
// the /readyz probe, on new connections from that address, still answer:
// each closes the oldest stalled one of its address.
func TestStalledConnectionsDoNotLockOutTheOperator(t *testing.T) {
	const maxConns = 200
	s := start(t, testserver.Config{API: withCredentials(),
		Conns: connguard.Options{MaxConnsPerAddr: 50, MaxConns: maxConns, OperatorReserve: 20}})
	conns := stalled(t, s, 4000)
	time.Sleep(1100 * time.Millisecond) // they have had their second to send a request
	for range 5 {
		if status, body := do(t, http.MethodGet, s.URL+"/question", operatorAuth(), ""); status != http.StatusOK {
			t.Fatalf("the operator's GET /question: %d %s", status, body)
		}
		if status, body := do(t, http.MethodGet, s.URL+"/readyz", "", ""); status != http.StatusOK {
			t.Fatalf("GET /readyz: %d %s", status, body)
		}
	}
	// On a loaded machine the server may not yet have accepted (and so
	// not yet closed) the last of them: they wait in the listen backlog,
	// open as far as the client can tell. Each pass takes about 4 s (a
	// millisecond per connection).
	open := stillOpen(conns)
	for deadline := time.Now().Add(30 * time.Second); open > maxConns && time.Now().Before(deadline); {
		open = stillOpen(conns)
	}
	if open > maxConns {
		t.Errorf("%d of the %d stalled connections are still open; want at most %d (--max-connections)", open, len(conns), maxConns)
	}
}

// longPoll holds a connection of the agent's with GET ?wait=.
func longPoll(t *testing.T, s *testserver.Server, token, id string) net.Conn {
	return rawRequest(t, s.Addr, head(s, http.MethodGet, "/elicitations/"+id+"?wait=60", "Bearer "+token, 0))
}

// ask asks as token's agent on a connection of its own and returns once the
// server has closed it: the Guard forgets a connection before its socket
// closes, so from then on it counts for nobody. (An HTTP client returns as
// soon as the body is read, and the connection still counting for the agent
// a moment later would take a place the test means for another.)
func ask(t *testing.T, s *testserver.Server, token string) string {
	t.Helper()
	h := head(s, http.MethodPost, "/elicitations", "Bearer "+token, len(form))
	conn := rawRequest(t, s.Addr, strings.Replace(h, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)+form)
	got, closed := readUntilClosed(conn, 10*time.Second)
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if !closed || err != nil {
		t.Fatalf("ask: %q (closed %v) %v", got, closed, err)
	}
	defer res.Body.Close()
	var q struct{ ID string }
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK ||
		json.NewDecoder(res.Body).Decode(&q) != nil || q.ID == "" {
		t.Fatalf("ask: %q", got)
	}
	return q.ID
}

// refused reads the answer of a request refused for want of connections.
func refused(t *testing.T, conn net.Conn, flag string) {
	t.Helper()
	got, closed := readUntilClosed(conn, 3*time.Second)
	if !closed || !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, flag) {
		t.Fatalf("a request beyond the cap: %q (closed %v); want 503 naming %s, then closed", got, closed, flag)
	}
}

// settle lets the server take in the long-polls just sent: they answer
// nothing before their end, so there is nothing to wait for.
func settle() { time.Sleep(time.Second) }

// An agent at its connection cap is refused (503, connection closed), and
// agents together cannot take the operators' reserve: the operator still
// gets in.
func TestAnAgentAtItsConnectionCapCannotTakeTheOperatorsReserve(t *testing.T) {
	s := start(t, testserver.Config{API: withCredentials(),
		Conns: connguard.Options{MaxConns: 30, OperatorReserve: 10, MaxConnsPerAgent: 12}})
	alphaQ, bravoQ := ask(t, s, alphaToken), ask(t, s, bravoToken)
	for range 12 {
		longPoll(t, s, alphaToken, alphaQ)
	}
	settle()
	refused(t, longPoll(t, s, alphaToken, alphaQ), "--max-connections-per-agent")

	for range 8 { // agents now hold 20: --max-connections less the reserve
		longPoll(t, s, bravoToken, bravoQ)
	}
	settle()
	refused(t, longPoll(t, s, bravoToken, bravoQ), "--operator-reserved-connections")

	var wg sync.WaitGroup
	statuses := make(chan int, 8)
	for range 8 { // the reserve's connections, at once
		wg.Go(func() {
			status, _ := do(t, http.MethodGet, s.URL+"/question", operatorAuth(), "")
			statuses <- status
		})
	}
	wg.Wait()
	close(statuses)
	for status := range statuses {
		if status != http.StatusOK {
			t.Errorf("the operator's GET /question while agents hold their share: %d", status)
		}
	}
}

// A shutdown does not wait for a request whose body is half-sent: Stop
// returns at once, without error, and the connection is closed.
func TestStopDoesNotWaitForAHalfSentBody(t *testing.T) {
	s, err := testserver.Start(testserver.Config{Logger: zaptest.NewLogger(t), FailureTimeout: 5 * time.Second,
		Conns: connguard.Options{BodyReadTimeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	conn := rawRequest(t, s.Addr, head(s, http.MethodPost, "/elicitations", "", 100)+`{"message":`)
	time.Sleep(100 * time.Millisecond) // the request is in, its body half-sent
	began := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop with a half-sent body: %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Stop took %s with a half-sent body open", took)
	}
	if got, closed := readUntilClosed(conn, 3*time.Second); !closed {
		t.Errorf("the half-sent request's connection is still open; read %q", got)
	}
}

// When every connection is being answered, a new one is refused at once
// with a 503 naming --max-connections, not left waiting.
func TestANewConnectionWithNoRoomIsRefusedAtOnce(t *testing.T) {
	entered := make(chan struct{}, 16)
	s := start(t, testserver.Config{API: withCredentials(),
		Conns: connguard.Options{MaxConns: 12, OperatorReserve: 4},
		Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("wait") {
					entered <- struct{}{} // the guard has seen the whole request
				}
				next.ServeHTTP(w, r)
			})
		}})
	id := ask(t, s, alphaToken)
	for range 8 {
		longPoll(t, s, alphaToken, id)
	}
	for range 8 { // on a loaded machine, taking them in may take longer than settle
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the long-polls did not reach questiond")
		}
	}
	for range 4 { // the operators' streams fill the reserve
		stream := rawRequest(t, s.Addr, head(s, http.MethodGet, "/global/event", operatorAuth(), 0))
		_ = stream.SetReadDeadline(time.Now().Add(3 * time.Second))
		if line, err := bufio.NewReader(stream).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("an operator stream: %q %v", line, err)
		}
	}
	settle()
	began := time.Now()
	conn, err := net.Dial("tcp", s.Addr) // nothing sent: the refusal comes first
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, closed := readUntilClosed(conn, 3*time.Second)
	if !closed || time.Since(began) > time.Second {
		t.Fatalf("a connection beyond --max-connections still open after %s; read %q", time.Since(began), got)
	}
	_, body, _ := strings.Cut(got, "\r\n\r\n")
	var refusal struct {
		Name string
		Data struct{ Message string }
	}
	if !strings.HasPrefix(got, "HTTP/1.1 503 ") || json.Unmarshal([]byte(body), &refusal) != nil ||
		!strings.Contains(refusal.Data.Message, "--max-connections") {
		t.Fatalf("a connection beyond --max-connections: %q", got)
	}
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("the refusal is not an HTTP answer: %v", err)
	}
	if data, err := io.ReadAll(res.Body); err != nil || string(data) != body {
		t.Fatalf("the refusal's Content-Length does not fit its body: %q %v", data, err)
	}
}

// Without credentials nobody authenticates: agents' connections (by the
// routes they use) still leave the operators' reserve alone, and stalled
// requests, bodies on operator routes included, cannot keep the /ui page
// and GET /question from answering.
func TestWithoutCredentialsTheUIKeepsTheOperatorsReserve(t *testing.T) {
	s := start(t, testserver.Config{Conns: connguard.Options{MaxConns: 40, OperatorReserve: 10, MaxConnsPerAddr: 10,
		BodyReadTimeout: time.Minute}})
	id := ask(t, s, "")
	for range 30 { // agents' whole share: --max-connections less the reserve
		rawRequest(t, s.Addr, head(s, http.MethodGet, "/elicitations/"+id+"?wait=60", "", 0))
	}
	settle()
	refused(t, rawRequest(t, s.Addr, head(s, http.MethodGet, "/elicitations/"+id+"?wait=60", "", 0)), "--operator-reserved-connections")
	for range 100 {
		rawRequest(t, s.Addr, head(s, http.MethodPost, "/question/"+id+"/reply", "", 100)+`{"answers":`)
		rawRequest(t, s.Addr, "GET /question HTTP/1.1\r\nHost: "+s.Addr+"\r\n")
	}
	for _, path := range []string{"/ui", "/question", "/ui", "/question"} {
		if status, body := do(t, http.MethodGet, s.URL+path, "", ""); status != http.StatusOK {
			t.Fatalf("GET %s with stalled requests and agents at their share: %d %s", path, status, body)
		}
	}
}

// watch follows GET /global/event and sends its data lines.
func watch(t *testing.T, s *testserver.Server) <-chan string {
	t.Helper()
	stream, err := http.Get(s.URL + "/global/event")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stream.Body.Close() })
	events := testkit.Data(stream.Body, 16)
	return events
}

// next waits for an event of type typ and returns its question id.
func next(t *testing.T, events <-chan string, typ string) string {
	t.Helper()
	line := testkit.Next(t, events, 10*time.Second, typ, func(line string) bool { return strings.Contains(line, `"`+typ+`"`) })
	var ev struct {
		Payload struct {
			Properties struct {
				ID        string
				RequestID string `json:"requestID"`
			} `json:"properties"`
		} `json:"payload"`
	}
	_ = json.Unmarshal([]byte(line), &ev)
	return ev.Payload.Properties.ID + ev.Payload.Properties.RequestID
}

// An MCP session's event stream (GET /mcp) and a tool call's long wait on
// POST /mcp read no body after their request: they outlive
// --body-read-timeout many times over.
func TestAnMCPSessionOutlivesTheBodyReadTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	s := start(t, testserver.Config{Conns: connguard.Options{BodyReadTimeout: timeout}})
	events := watch(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := mcptest.Connect(t, ctx, s.URL+"/mcp")
	time.Sleep(20 * timeout) // the session's GET /mcp stream is open all along
	result := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
			"questions": []any{map[string]any{"question": "Which database?", "header": "Database",
				"options": []any{map[string]any{"label": "Postgres", "description": "Relational"}}}},
		}})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %+v", res.Content)
		}
		result <- err
	}()
	id := next(t, events, "question.asked")
	time.Sleep(20 * timeout) // the tool call waits, well past the deadline
	if status, body := do(t, http.MethodPost, s.URL+"/question/"+id+"/reply", "", `{"answers":[["Postgres"]]}`); status != http.StatusOK {
		t.Fatalf("reply: %d %s", status, body)
	}
	if err := <-result; err != nil {
		t.Fatalf("the tool call after waiting past the body read timeout: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("the MCP session after the wait: %v", err)
	}
}
