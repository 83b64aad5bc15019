package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/questiond/questiond/bench/bare"
	"github.com/questiond/questiond/bench/workload"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// target is one server under test, started and ready.
type target struct {
	name    string
	base    string // http://host:port
	proc    *process
	cleanup func() // what else was started for it (the fake model)
	// makePending makes n questions pending; n is the only count asked for.
	makePending func(client *http.Client, n int) error
	// slowToAsk is set for OpenCode, which takes minutes to make cfg.pending
	// questions pending (a session and a model turn each, slower as its
	// sessions pile up): its replies are measured in one round only.
	slowToAsk bool
	// settle, when not nil, waits until the work a round of replies set off
	// is over, so that it does not load the next measurements.
	settle func(client *http.Client) error
}

// replyRounds is how many rounds of replies t is measured in.
func (t *target) replyRounds(cfg *config) int {
	if t.slowToAsk {
		return 1
	}
	return cfg.rounds
}

// startQuestiond runs the questiond binary with its defaults but: the given
// store (bolt in a fresh data directory), a free loopback port, JSON logs
// (to read the port from), and no request rate limit, since all the load
// comes from one client that the limiter would otherwise refuse.
func startQuestiond(cfg *config, name, store string) (*target, error) {
	dataDir := filepath.Join(cfg.work, name+"-data")
	cmd := exec.Command(cfg.questiond, "--store", store, "--data-dir", dataDir,
		"--addr", "127.0.0.1:0", "--log-format", "json", "--rate-limit", "0",
		"--max-streams", fmt.Sprint(cfg.subscribers+100))
	cmd.Env = environWithout("QUESTIOND_", "OPENCODE_SERVER_")
	p, addr, err := startProcess(name, cmd, filepath.Join(cfg.work, name+".log"), launch.ListeningAddr)
	if err != nil {
		return nil, err
	}
	t := &target{name: name, base: "http://" + addr, proc: p}
	t.makePending = func(client *http.Client, n int) error {
		return askQuestiond(client, t.base, n, cfg.conns)
	}
	return t, nil
}

// askQuestiond posts n elicitations of workload.SeedForm from up to conns
// agents at once.
func askQuestiond(client *http.Client, base string, n, conns int) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(conns, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if _, err := exchange(client, base, request{http.MethodPost, "/elicitations", workload.SeedForm}, http.StatusCreated); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// startBare re-runs this program as the bare server (see bare.Serve). Its
// pending questions are the items questiond listed (cfg.seed), so it can
// only be measured after questiond.
func startBare(cfg *config) (*target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve-bare")
	p, addr, err := startProcess("bare", cmd, filepath.Join(cfg.work, "bare.log"), func(line string) string {
		if addr, ok := strings.CutPrefix(line, bare.ListeningPrefix); ok {
			return addr
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	t := &target{name: "bare", base: "http://" + addr, proc: p}
	t.makePending = func(client *http.Client, n int) error {
		if cfg.seed == nil {
			return errors.New("the bare server sends questiond's bytes: measure questiond (memory) before it")
		}
		var items []json.RawMessage
		if err := json.Unmarshal(cfg.seed, &items); err != nil || len(items) != n {
			return fmt.Errorf("questiond listed %d questions, not %d (%v)", len(items), n, err)
		}
		_, err := exchange(client, t.base, request{http.MethodPost, "/seed", cfg.seed}, http.StatusNoContent)
		return err
	}
	return t, nil
}

// waitPending polls GET /question until it lists n questions.
func waitPending(client *http.Client, base string, n int, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		body, err := getBody(client, base+"/question")
		if err != nil {
			return nil, err
		}
		var items []json.RawMessage
		if err := json.Unmarshal(body, &items); err != nil {
			return nil, fmt.Errorf("GET /question: %w", err)
		}
		if len(items) >= n {
			return body, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d questions pending after %v, want %d", len(items), timeout, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func getBody(client *http.Client, url string) ([]byte, error) {
	res, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d: %.300s", url, res.StatusCode, body)
	}
	return body, nil
}
