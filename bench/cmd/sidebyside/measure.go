package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/questiond/questiond/bench/workload"
)

// measurement is what one server measured in one run; each load case holds
// one result per round.
type measurement struct {
	idleKiB       int64
	perSubscriber float64 // KiB
	perPending    float64 // KiB
	subscribed    int
	empty         []loadResult // GET /question, nothing pending
	full          []loadResult // GET /question, cfg.pending pending
	reply         []loadResult // each pending question answered once
	unknown       []loadResult // replies to an id never asked
	pendingList   []byte       // GET /question's body with cfg.pending pending
}

// unknownID is shaped like the ids of both servers (que_ and 26 more) and
// is never one.
const unknownID = "que_ffffffffffffffbenchunknown"

// measureAll runs every case on every target. The servers all run from the
// start, and each timed case visits them in turn, round after round, so
// that whatever else loads the machine meanwhile falls on all of them
// alike. Memory is read first, on quiet processes: idle, with idle event
// subscribers, and with the questions pending. Then come the loads: the
// full list, one round of replies (after which OpenCode is given the time
// to finish the model turns they start), the empty list, replies to an
// unknown id, and the remaining rounds of replies.
func measureAll(cfg *config, targets []*target) (map[string]*measurement, error) {
	client := newLoadClient(cfg.conns)
	defer client.CloseIdleConnections()
	results := make(map[string]*measurement)
	for _, t := range targets {
		m, err := measureIdle(cfg, client, t)
		if err == nil {
			fmt.Fprintf(os.Stderr, "  %s: making %d questions pending\n", t.name, cfg.pending)
			err = measurePending(cfg, client, t, m)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		results[t.name] = m
	}
	rounds := func(want int, req request, into func(*measurement) *[]loadResult) {
		for round := range cfg.rounds {
			for _, t := range targets {
				fmt.Fprintf(os.Stderr, "  %s: %s %s, round %d\n", t.name, req.method, req.path, round+1)
				r := timed(cfg, client, t.base, want, req)
				*into(results[t.name]) = append(*into(results[t.name]), r)
			}
		}
	}
	replyRound := func(round int) error {
		for _, t := range targets {
			m := results[t.name]
			if round >= t.replyRounds(cfg) {
				continue
			}
			if round > 0 {
				if err := t.makePending(client, cfg.pending); err != nil {
					return fmt.Errorf("%s: making %d questions pending again: %w", t.name, cfg.pending, err)
				}
				list, err := waitPending(client, t.base, cfg.pending, pendingTimeout)
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				m.pendingList = list
			}
			fmt.Fprintf(os.Stderr, "  %s: replying to %d questions, round %d\n", t.name, cfg.pending, round+1)
			r, err := replyAll(cfg, client, t, m.pendingList)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			m.reply = append(m.reply, r)
			if t.settle != nil {
				if err := t.settle(client); err != nil {
					return fmt.Errorf("%s: after the replies: %w", t.name, err)
				}
			}
		}
		return nil
	}
	get := request{http.MethodGet, "/question", nil}
	rounds(http.StatusOK, get, func(m *measurement) *[]loadResult { return &m.full })
	if err := replyRound(0); err != nil {
		return nil, err
	}
	rounds(http.StatusOK, get, func(m *measurement) *[]loadResult { return &m.empty })
	rounds(http.StatusNotFound, request{http.MethodPost, "/question/" + unknownID + "/reply", workload.SeedAnswers}, func(m *measurement) *[]loadResult { return &m.unknown })
	for round := 1; round < cfg.rounds; round++ {
		if err := replyRound(round); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// replyAll answers each question of list (a GET /question body) once.
func replyAll(cfg *config, client *http.Client, t *target, list []byte) (loadResult, error) {
	var items []struct{ ID string }
	if err := json.Unmarshal(list, &items); err != nil {
		return loadResult{}, fmt.Errorf("GET /question: %w", err)
	}
	replies := make([]request, len(items))
	for i, q := range items {
		replies[i] = request{http.MethodPost, "/question/" + q.ID + "/reply", workload.SeedAnswers}
	}
	return drive(client, t.base, cfg.conns, 0, http.StatusOK, each(replies)), nil
}

// measureIdle reads t's resident memory once it has answered one request,
// and again with cfg.subscribers idle event streams open.
func measureIdle(cfg *config, client *http.Client, t *target) (*measurement, error) {
	if _, err := getBody(client, t.base+"/question"); err != nil {
		return nil, err
	}
	time.Sleep(cfg.settle)
	idle, err := residentKiB(t.proc.pid())
	if err != nil {
		return nil, err
	}
	withSubscribers, n, err := subscribe(t, cfg)
	if err != nil {
		return nil, err
	}
	time.Sleep(cfg.settle) // the subscribers' streams end
	return &measurement{idleKiB: idle, subscribed: n, perSubscriber: float64(withSubscribers-idle) / float64(n)}, nil
}

// measurePending makes cfg.pending questions pending on t and reads what
// they cost in resident memory.
func measurePending(cfg *config, client *http.Client, t *target, m *measurement) error {
	before, err := residentKiB(t.proc.pid())
	if err != nil {
		return err
	}
	start := time.Now()
	if err := t.makePending(client, cfg.pending); err != nil {
		return fmt.Errorf("making %d questions pending: %w", cfg.pending, err)
	}
	list, err := waitPending(client, t.base, cfg.pending, pendingTimeout)
	if err != nil {
		return err
	}
	if t.name == "questiond" {
		cfg.seed = list
	}
	m.pendingList = list
	fmt.Fprintf(os.Stderr, "  %s: %d questions pending after %v\n", t.name, cfg.pending, time.Since(start).Round(100*time.Millisecond))
	time.Sleep(cfg.settle)
	after, err := residentKiB(t.proc.pid())
	if err != nil {
		return err
	}
	m.perPending = float64(after-before) / float64(cfg.pending)
	return nil
}

// timed warms the server up with the request, then measures it for the
// configured duration.
func timed(cfg *config, client *http.Client, base string, want int, req request) loadResult {
	if cfg.warmup > 0 {
		drive(client, base, cfg.conns, cfg.warmup, want, repeat(req))
	}
	return drive(client, base, cfg.conns, cfg.duration, want, repeat(req))
}

// subscribe opens cfg.subscribers raw /event streams, waits for each one's
// server.connected, reads the resident memory, and closes them.
func subscribe(t *target, cfg *config) (int64, int, error) {
	addr := strings.TrimPrefix(t.base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range cfg.subscribers {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			return 0, 0, err
		}
		conns = append(conns, c)
		if _, err := fmt.Fprintf(c, "GET /event HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr); err != nil {
			return 0, 0, err
		}
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		lines := bufio.NewReader(c)
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				return 0, 0, fmt.Errorf("event subscriber %d: no server.connected: %w", i, err)
			}
			if strings.Contains(line, "server.connected") {
				break
			}
		}
	}
	time.Sleep(cfg.settle)
	kib, err := residentKiB(t.proc.pid())
	return kib, len(conns), err
}

// describeRun is the run's Markdown header: when, on what, with what.
func describeRun(cfg *config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	version, err := exec.Command(cfg.questiond, "--version").Output()
	if err != nil {
		version = []byte("unknown (" + err.Error() + ")")
	}
	fmt.Fprintf(&b, "- questiond: %s\n", strings.TrimSpace(string(version)))
	fmt.Fprintf(&b, "- Go: %s, %s/%s, %d CPUs\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(&b, "- load average at the start: %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
	}
	fmt.Fprintf(&b, "- load: %d keep-alive connections from one Go client on the same machine; %d rounds of %v per timed case (after %v of warm-up), the servers taking turns; replies: %d rounds (OpenCode: 1, as it takes minutes to make its questions pending) of %d pending questions each answered once; %d idle `/event` subscribers\n",
		cfg.conns, cfg.rounds, cfg.duration, cfg.warmup, cfg.rounds, cfg.pending, cfg.subscribers)
	b.WriteString("- order: memory first, on quiet processes (idle after one request, with the subscribers, with the questions pending), then the list with questions pending, one round of replies (OpenCode then given the time to finish the model turn each reply starts), the empty list, replies to an unknown id, and the other rounds of replies; figures are the median round\n")
	b.WriteString("- questiond runs as `questiond --store memory|bolt --rate-limit 0` (all the load is one client), otherwise with its defaults; the bare server is this program (`-serve-bare`) sending questiond's own `GET /question` bytes, pre-encoded\n")
	return b.String()
}
