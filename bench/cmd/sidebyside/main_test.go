package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/bench/bare"
	"github.com/questiond/questiond/bench/workload"
	"github.com/questiond/questiond/internal/fakellm"
	"github.com/questiond/questiond/internal/opencodenpm"
	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
)

// TestMain lets startBare re-run this test binary as the bare server, as
// it re-runs the sidebyside binary.
func TestMain(m *testing.M) {
	if slices.Contains(os.Args[1:], "-serve-bare") {
		if err := bare.Serve(); err != nil {
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

func send(t *testing.T, method, url string, body []byte) (int, string) {
	t.Helper()
	return testkit.SendJSON(t, method, url, string(body))
}

// The bare server lists exactly the bytes it was seeded with, in order, and
// forgets a question once it is replied to.
func TestBareServerSendsTheSeededBytes(t *testing.T) {
	srv := httptest.NewServer(bare.New().Handler())
	defer srv.Close()
	first := `{"id":"que_1", "questions":[{"question":"A?"}]}`
	second := `{"sessionID":"ses_2","id":"que_2"}`
	if status, body := send(t, http.MethodPost, srv.URL+"/seed", []byte("["+first+",\n"+second+"]")); status != http.StatusNoContent {
		t.Fatalf("seed: %d %s", status, body)
	}
	if _, body := send(t, http.MethodGet, srv.URL+"/question", nil); body != "["+first+","+second+"]" {
		t.Fatalf("list = %s", body)
	}
	if status, body := send(t, http.MethodPost, srv.URL+"/question/que_1/reply", workload.SeedAnswers); status != http.StatusOK || body != "true" {
		t.Fatalf("reply: %d %s", status, body)
	}
	if _, body := send(t, http.MethodGet, srv.URL+"/question", nil); body != "["+second+"]" {
		t.Fatalf("list after the reply = %s", body)
	}
	if status, _ := send(t, http.MethodPost, srv.URL+"/question/que_1/reply", workload.SeedAnswers); status != http.StatusNotFound {
		t.Fatalf("second reply: %d, want 404", status)
	}
	if status, _ := send(t, http.MethodPost, srv.URL+"/seed", []byte(`[{"noid":1}]`)); status != http.StatusBadRequest {
		t.Fatalf("seeding an item without an id: %d, want 400", status)
	}
}

// drive sends each request of a list exactly once, whatever the
// concurrency, and counts answers with another status as failures.
func TestDriveSendsEachRequestOnceAndCountsFailures(t *testing.T) {
	var mu sync.Mutex
	seen := make(map[string]int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/fail" {
			http.Error(w, "no", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	var reqs []request
	for i := range 100 {
		reqs = append(reqs, request{http.MethodGet, "/q/" + strconv.Itoa(i), nil})
	}
	reqs = append(reqs, request{http.MethodGet, "/fail", nil})
	client := newLoadClient(8)
	r := drive(client, srv.URL, 8, 0, http.StatusOK, each(reqs))
	if r.ok != 100 || r.failed != 1 || len(r.latencies) != 100 || !strings.Contains(r.firstError, "status 418") {
		t.Fatalf("ok %d, failed %d, %d latencies, first error %q", r.ok, r.failed, len(r.latencies), r.firstError)
	}
	for _, req := range reqs {
		if seen[req.path] != 1 {
			t.Fatalf("%s sent %d times", req.path, seen[req.path])
		}
	}
	if r.perSecond() <= 0 || r.quantile(0.99) < r.quantile(0.5) {
		t.Fatalf("rate %v, p50 %v, p99 %v", r.perSecond(), r.quantile(0.5), r.quantile(0.99))
	}
	timed := drive(client, srv.URL, 4, 100*time.Millisecond, http.StatusOK, repeat(request{http.MethodGet, "/again", nil}))
	if timed.ok == 0 || timed.ok != seen["/again"] || timed.elapsed < 100*time.Millisecond {
		t.Fatalf("timed: ok %d, server saw %d, elapsed %v", timed.ok, seen["/again"], timed.elapsed)
	}
}

// The benchmark's fake model calls the question tool only on a turn that
// offers it and ends with the user's message; other turns get text.
func TestFakeLLMAsksOnlyWhenTheUserSpokeLast(t *testing.T) {
	llm, err := fakellm.Start(askSeedForm)
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	base := llm.URL
	tools := `"tools":[{"type":"function","function":{"name":"bash"}},{"type":"function","function":{"name":"question"}}]`
	for _, c := range []struct{ name, body, want, not string }{
		{"user turn", `{"stream":true,` + tools + `,"messages":[{"role":"user","content":"hi"}]}`, `"name":"question"`, "Thanks"},
		{"after the answer", `{"stream":true,` + tools + `,"messages":[{"role":"user"},{"role":"tool"}]}`, "Thanks, noted.", "tool_calls"},
		{"title", `{"stream":false,"messages":[{"role":"user"}]}`, "Fake title", "tool_calls"},
	} {
		status, body := send(t, http.MethodPost, base+"/chat/completions", []byte(c.body))
		if status != http.StatusOK || !strings.Contains(body, c.want) || strings.Contains(body, c.not) {
			t.Errorf("%s: %d\n%s", c.name, status, body)
		}
	}
	_, body := send(t, http.MethodPost, base+"/chat/completions", []byte(`{"stream":true,`+tools+`,"messages":[{"role":"user"}]}`))
	if !strings.Contains(body, `Equipment model? (pick one) (required)`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("the tool call does not carry workload.SeedForm's questions as questiond shows them, or the stream does not end:\n%s", body)
	}
}

// Without npm and with nothing cached the run stops, saying OpenCode could
// not be installed, and prints no table.
func TestRunFailsWhenOpencodeCannotBeInstalled(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	var out bytes.Buffer
	cfg := &config{questiond: "/nonexistent/questiond", opencodeVersion: opencodenpm.Pinned, work: t.TempDir(),
		conns: 1, rounds: 1, pending: 1, subscribers: 1, duration: time.Millisecond}
	err := run(cfg, "opencode", &out)
	if err == nil || !strings.Contains(err.Error(), "cannot install opencode-ai@"+opencodenpm.Pinned) || !strings.Contains(err.Error(), "npm") {
		t.Fatalf("error %v does not say opencode-ai could not be installed for want of npm", err)
	}
	if out.Len() != 0 {
		t.Fatalf("printed a table anyway:\n%s", &out)
	}
}

// A short run against questiond and the bare server gives every row of the
// table, both servers list the same bytes, and nothing fails.
func TestRunQuestiondBesideBare(t *testing.T) {
	testenv.Heavy(t, "builds questiond and runs it and the bare server as processes")
	bin, dir := testkit.Binary(t), t.TempDir()
	cfg := &config{questiond: bin, work: dir, conns: 4, rounds: 2, pending: 5, subscribers: 3,
		duration: 100 * time.Millisecond, settle: 10 * time.Millisecond}
	var out bytes.Buffer
	if err := run(cfg, "bare,questiond", &out); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{"| case | questiond | bare | questiond / bare |", "`GET /question`, 5 pending, req/s",
		"reply (each of 5 once), p99 ms", "reply to an unknown id (404), req/s", "RSS per pending question, KiB"} {
		if !strings.Contains(table, want) {
			t.Errorf("no %q in\n%s", want, table)
		}
	}
	if strings.Contains(table, "failed") {
		t.Errorf("requests failed:\n%s", table)
	}
	sizes := regexp.MustCompile("- (\\S+): `GET /question` body (\\d+) B").FindAllStringSubmatch(table, -1)
	if len(sizes) != 2 || sizes[0][2] != sizes[1][2] || sizes[0][2] == "2" {
		t.Errorf("questiond and bare do not list the same bytes: %v\n%s", sizes, table)
	}
}
