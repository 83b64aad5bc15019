package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/sse"
)

const (
	metricsPassword = "metrics-test-operator-password"
	metricsAgent    = "builder-agent-name"
	metricsToken    = "metrics-test-agent-token-0123456789"
	metricsSession  = "ses_metricsSessionSecret"
	metricsMCPSess  = "ses_metricsMCPSessionSecret"
	metricsDir      = "/work/secret-project-dir"
	metricsMessage  = "Which secret plan shall we deploy?"
	metricsMCPText  = "Ship the confidential release now?"
	metricsAnswer   = "Plan Zebra Confidential"
)

// bearer adds the agent's token to every request.
type bearer struct{ next http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+metricsToken)
	return b.next.RoundTrip(r)
}

// metricsDaemon runs a durable daemon with metrics, a stall listener, an
// event queue of 2 and room for one pending question.
func metricsDaemon(t *testing.T) (d *daemon.Daemon, ln *stallListener, metricsURL string) {
	cfg := config(t)
	ln = newStallListener(t)
	cfg.Listener = ln
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = mln
	cfg.Events = sse.Options{Heartbeat: time.Hour, QueueLength: 2, WriteTimeout: time.Minute}
	cfg.API.Auth = httpapi.Auth{OperatorPassword: metricsPassword, AgentTokens: map[string]string{metricsAgent: metricsToken}}
	cfg.API.Limits.MaxPending = 1
	d = running(t, cfg)
	return d, ln, "http://" + mln.Addr().String() + "/metrics"
}

// send sends one request as the operator ("operator") or the agent, and
// returns the status and body.
func send(t *testing.T, role, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if role == "operator" {
		req.SetBasicAuth("opencode", metricsPassword)
	} else {
		req.Header.Set("Authorization", "Bearer "+metricsToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

// The acceptance test of /metrics: a scripted round trip — an operator's
// event stream and a stalled one, a question asked over HTTP and answered,
// one refused by the pending limit, one asked over MCP and answered — moves
// each metric by exactly what happened, and no label anywhere carries an
// id, a directory, a name or text from it.
func TestMetricsFollowARoundTrip(t *testing.T) {
	t.Parallel()
	d, ln, metricsURL := metricsDaemon(t)
	base := "http://" + d.Addr().String()
	before, _ := scrape(t, metricsURL)

	// An operator's stream that reads, and one that stops reading at once.
	req, _ := http.NewRequest(http.MethodGet, base+"/event?directory="+metricsDir, nil)
	req.SetBasicAuth("opencode", metricsPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := readEvents(resp.Body)
	nextEvent(t, events, "server.connected")
	stalled, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stalled.Close() })
	ln.stall(stalled.LocalAddr().String())
	fmt.Fprintf(stalled, "GET /event?directory=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\n\r\n",
		metricsDir, ln.Addr(), basicAuth("opencode", metricsPassword))
	eventually(t, "two event subscribers", func() bool { return d.Bus().Subscribers() == 2 })
	mid, _ := scrape(t, metricsURL)
	wantSample(t, mid, "questiond_event_subscribers", 2)

	// Asked over HTTP; a second question is over the pending limit.
	ask := fmt.Sprintf(`{"message":%q,"sessionID":%q,"directory":%q,"requestedSchema":{"type":"object","properties":{"plan":{"type":"string","enum":[%q,"Other"]}},"required":["plan"]}}`,
		metricsMessage, metricsSession, metricsDir, metricsAnswer)
	if status, body := send(t, "agent", http.MethodPost, base+"/elicitations", ask); status != http.StatusCreated {
		t.Fatalf("POST /elicitations: %d %s", status, body)
	}
	id := nextEvent(t, events, "question.asked").Properties.ID
	if status, body := send(t, "agent", http.MethodPost, base+"/elicitations", ask); status != http.StatusTooManyRequests {
		t.Fatalf("POST /elicitations over the limit: %d %s", status, body)
	}
	mid, _ = scrape(t, metricsURL)
	wantSample(t, mid, "questiond_questions_pending", 1)
	if status, body := send(t, "operator", http.MethodGet, base+"/question", ""); status != http.StatusOK || !strings.Contains(body, id) {
		t.Fatalf("GET /question: %d %s", status, body)
	}
	reply := fmt.Sprintf(`{"answers":[[%q]]}`, metricsAnswer)
	if status, body := send(t, "operator", http.MethodPost, base+"/question/"+id+"/reply", reply); status != http.StatusOK {
		t.Fatalf("reply: %d %s", status, body)
	}
	nextEvent(t, events, "question.replied")

	// Asked over MCP and answered while the tool call waits.
	mcpID := askOverMCP(t, d, base, events, reply)

	eventually(t, "the stalled stream cut off and gone", func() bool { return d.Bus().Subscribers() == 1 })
	eventually(t, "the MCP session closed", func() bool { return d.API().MCPSessions() == 0 })
	after, text := scrape(t, metricsURL)

	moved := func(name string, by float64) {
		t.Helper()
		if got := after[name] - before[name]; got != by {
			t.Errorf("%s moved by %v, want %v", name, got, by)
		}
	}
	moved("questiond_questions_asked_total", 2)
	moved(`questiond_questions_ended_total{ending="replied"}`, 2)
	for _, e := range []string{"rejected", "timeout", "withdrawn", "disconnected", "shutdown"} {
		moved(`questiond_questions_ended_total{ending="`+e+`"}`, 0)
	}
	moved(`questiond_question_wait_seconds_count{ending="replied"}`, 2)
	moved(`questiond_question_wait_seconds_bucket{ending="replied",le="+Inf"}`, 2)
	wantSample(t, after, "questiond_questions_pending", 0)
	wantSample(t, after, "questiond_event_subscribers", 1)
	moved("questiond_events_published_total", 4) // asked and replied, twice
	moved("questiond_event_subscribers_cut_off_total", 1)
	moved(`questiond_store_commit_seconds_count{op="put"}`, 4) // each question stored, then its ending
	moved(`questiond_limit_refusals_total{limit="pending"}`, 1)
	moved(`questiond_limit_refusals_total{limit="rate"}`, 0)
	moved(`questiond_mcp_tool_calls_total{result="accept",tool="ask_user_question"}`, 1)
	wantSample(t, after, "questiond_mcp_sessions", 0)
	moved(`questiond_http_requests_total{method="POST",route="/elicitations",status="201"}`, 1)
	moved(`questiond_http_requests_total{method="POST",route="/elicitations",status="429"}`, 1)
	moved(`questiond_http_requests_total{method="GET",route="/question",status="200"}`, 1)
	moved(`questiond_http_requests_total{method="POST",route="/question/{requestID}/reply",status="200"}`, 2)
	moved(`questiond_http_requests_total{method="GET",route="/event",status="200"}`, 2)
	if after[`questiond_http_requests_total{method="POST",route="/mcp",status="200"}`] < 2 {
		t.Errorf("MCP requests not counted under /mcp:\n%s", grepLines(text, "http_requests"))
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes"} {
		if _, ok := after[name]; !ok {
			t.Errorf("no %s: the Go collector is missing", name)
		}
	}
	if _, ok := after["process_resident_memory_bytes"]; !ok && runtime.GOOS == "linux" {
		t.Error("no process_resident_memory_bytes: the process collector is missing")
	}

	if !strings.Contains(text, `questiond_build_info{goversion="`+runtime.Version()+`",store="bolt",version="`) {
		t.Errorf("no questiond_build_info naming the bolt store:\n%s", grepLines(text, "build_info"))
	}

	// Nothing from the round trip is a label, nor anywhere in the scrape.
	for _, secret := range []string{id, mcpID, metricsSession, metricsMCPSess, metricsDir, metricsMessage,
		metricsMCPText, metricsAnswer, metricsAgent, metricsToken, metricsPassword, "que_", "ses_"} {
		if strings.Contains(text, secret) {
			t.Errorf("the scrape holds %q:\n%s", secret, grepLines(text, secret))
		}
	}
	allowed := map[string]func(string) bool{
		"method": oneOf("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "other"),
		"route":  func(v string) bool { return v == httpapi.RouteUnmatched || strings.HasPrefix(v, "/") },
		"status": func(v string) bool { return len(v) == 3 && v >= "100" && v <= "599" },
		"ending": oneOf("replied", "rejected", "timeout", "withdrawn", "disconnected", "shutdown"),
		"limit":  oneOf("rate", "pending", "pending_per_agent", "streams", "mcp_streams", "mcp_streams_per_agent", "mcp_sessions", "mcp_sessions_per_agent"),
		"tool":   oneOf("ask_user_question", "ask_parent_question"),
		"result": oneOf("accept", "decline", "cancel", "error"),
		"op":     oneOf("put", "delete"),
		"reason": oneOf(connguard.Reasons...),
		"le":     func(string) bool { return true },
		// questiond_build_info's: one series per process.
		"goversion": func(v string) bool { return v == runtime.Version() },
		"store":     oneOf("memory", "bolt", "postgres", "journal"),
	}
	for name, values := range labelValues(text) {
		ok, known := allowed[name]
		if !known && !strings.HasPrefix(name, "go_") && name != "version" && name != "quantile" && name != "gc" {
			t.Errorf("unexpected label %q (values %q)", name, values)
			continue
		}
		for _, v := range values {
			if known && !ok(v) {
				t.Errorf("label %s=%q is outside its fixed set", name, v)
			}
		}
	}
}

// askOverMCP calls the question tool, answers its question as the operator
// while the call waits, checks a session is counted meanwhile, and returns
// the question's id once the call returned accept.
func askOverMCP(t *testing.T, d *daemon.Daemon, base string, events <-chan sseEvent, reply string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   base + "/mcp?session=" + metricsMCPSess + "&directory=" + metricsDir,
		HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a stateful session, which counts
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	called := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
			"questions": []any{map[string]any{"question": metricsMCPText, "header": "Release", "options": []any{
				map[string]any{"label": metricsAnswer}, map[string]any{"label": "No"}}}},
		}})
		called <- outcome{res, err}
	}()
	id := nextEvent(t, events, "question.asked").Properties.ID
	if n := d.API().MCPSessions(); n != 1 {
		t.Errorf("%d MCP sessions during the call, want 1", n)
	}
	if status, body := send(t, "operator", http.MethodPost, base+"/question/"+id+"/reply", reply); status != http.StatusOK {
		t.Fatalf("reply over MCP: %d %s", status, body)
	}
	got := <-called
	if got.err != nil || got.res.IsError {
		t.Fatalf("tool call: %v %+v", got.err, got.res)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

func wantSample(t *testing.T, samples map[string]float64, name string, want float64) {
	t.Helper()
	if got, ok := samples[name]; !ok || got != want {
		t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
	}
}

func oneOf(values ...string) func(string) bool {
	return func(v string) bool {
		for _, w := range values {
			if v == w {
				return true
			}
		}
		return false
	}
}

func grepLines(text, substr string) string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func basicAuth(user, password string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, password)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}
