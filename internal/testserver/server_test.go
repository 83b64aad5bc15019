package testserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testserver"
)

// Leak sources this guards: the HTTP server and its connections, the event
// broker, store timers, and the tests' own agents and stream readers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const form = `{"message":"Which model?","requestedSchema":{"type":"object",
	"properties":{"model":{"type":"string","enum":["SY215C","SY365H"]}}}}`

func start(t *testing.T, cfg testserver.Config) *testserver.Server {
	t.Helper()
	cfg.Logger = zaptest.NewLogger(t)
	cfg.Events = sse.Options{Heartbeat: time.Hour}
	return testkit.Serve(t, cfg)
}

func send(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	return testkit.SendJSON(t, method, url, body)
}

// askAndWait sends POST /elicit, which waits for the question's end, and
// returns once questiond has announced the question; the agent's answer
// arrives on the channel.
func askAndWait(t *testing.T, s *testserver.Server) <-chan string {
	t.Helper()
	res, err := http.Get(s.URL + "/event")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/elicit", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		answer <- res.Status + " " + string(data)
	}()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"question.asked"`) {
			return answer
		}
	}
	t.Fatalf("the event stream ended before question.asked: %v", sc.Err())
	return nil
}

func TestServesTheAPIBehindWrap(t *testing.T) {
	var seen atomic.Int64
	s := start(t, testserver.Config{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			next.ServeHTTP(w, r)
		})
	}})
	if host, _, err := net.SplitHostPort(s.Addr); err != nil || host != "127.0.0.1" || s.URL != "http://"+s.Addr {
		t.Fatalf("Addr %q, URL %q: want a loopback address and its URL", s.Addr, s.URL)
	}
	if status, body := send(t, http.MethodGet, s.URL+"/question", ""); status != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Fatalf("GET /question: %d %s", status, body)
	}
	if seen.Load() != 1 {
		t.Fatalf("Wrap saw %d requests, want 1", seen.Load())
	}
	if s.Journal != nil {
		t.Fatal("a memory store has a journal")
	}
}

func TestStopEndsPendingQuestionsAsCancelWithTheMemoryStore(t *testing.T) {
	s := start(t, testserver.Config{})
	answer := askAndWait(t, s)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := <-answer; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"action":"cancel"`) {
		t.Fatalf("the waiting agent got %s, want a cancel", got)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if _, err := http.Get(s.URL + "/question"); err == nil {
		t.Fatal("the server still answers after Stop")
	}
}

func TestTheDurableStoreKeepsPendingQuestionsAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "questiond.db")
	first := start(t, testserver.Config{BoltPath: path, Bolt: pending.BoltOptions{NoSync: true}})
	answer := askAndWait(t, first)
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := <-answer; !strings.HasPrefix(got, "503 ") || !strings.Contains(got, "stays pending") {
		t.Fatalf("the waiting agent got %s, want a 503 that keeps the question", got)
	}

	second := start(t, testserver.Config{BoltPath: path, Addr: first.Addr})
	if second.URL != first.URL || second.Journal == nil {
		t.Fatalf("restarted at %s (journal %v), want %s with a journal", second.URL, second.Journal, first.URL)
	}
	status, body := send(t, http.MethodGet, second.URL+"/question", "")
	var listed []struct{ ID string }
	if err := json.Unmarshal([]byte(body), &listed); status != http.StatusOK || err != nil || len(listed) != 1 {
		t.Fatalf("GET /question after the restart: %d %s, want the one question", status, body)
	}
}

// TestStopDoesNotWaitForSilentConnections: http.Server.Shutdown alone waits
// five seconds for a connection that never sent a request.
func TestStopDoesNotWaitForSilentConnections(t *testing.T) {
	s := start(t, testserver.Config{})
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A request on another connection proves the silent one was accepted.
	if status, body := send(t, http.MethodGet, s.URL+"/question", ""); status != http.StatusOK {
		t.Fatalf("GET /question: %d %s", status, body)
	}
	began := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Fatalf("Stop took %v with a silent connection open", took)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the silent connection read %d bytes, %v; want it closed", n, err)
	}
}

// TestAJournalTheCallerOwnsOutlivesStop: Stop keeps its pending questions
// and leaves it open.
func TestAJournalTheCallerOwnsOutlivesStop(t *testing.T) {
	journal := openBolt(t)
	s := start(t, testserver.Config{Journal: journal})
	if status, body := send(t, http.MethodPost, s.URL+"/elicitations", form); status != http.StatusCreated {
		t.Fatalf("POST /elicitations: %d %s", status, body)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	records, err := journal.Load(context.Background())
	if err != nil {
		t.Fatalf("the journal after Stop: %v", err)
	}
	if len(records) != 1 || records[0].Ended != nil {
		t.Fatalf("the journal holds %d records after Stop, want the one pending question", len(records))
	}
}

func TestStartFailuresLeaveNothingRunning(t *testing.T) {
	taken := start(t, testserver.Config{})
	for name, cfg := range map[string]testserver.Config{
		"both BoltPath and Journal": {BoltPath: filepath.Join(t.TempDir(), "q.db"), Journal: openBolt(t)},
		"an address in use":         {Addr: taken.Addr},
		"a bad broker setting":      {Events: sse.Options{Heartbeat: -time.Second}},
		"a directory for a file":    {BoltPath: t.TempDir()},
	} {
		if s, err := testserver.Start(cfg); err == nil {
			_ = s.Stop()
			t.Errorf("%s: Start succeeded", name)
		}
	}
}

func openBolt(t *testing.T) *pending.Bolt {
	t.Helper()
	journal, err := pending.OpenBolt(filepath.Join(t.TempDir(), "questiond.db"), pending.BoltOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = journal.Close() })
	return journal
}
