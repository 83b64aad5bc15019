package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// daemonProcess is the real questiond binary running on a random port.
type daemonProcess struct {
	*launch.Process
	base string
}

// sharedBinary is cmd/questiond, built once for all process tests.
func sharedBinary(t *testing.T) string { return testkit.Binary(t) }

// startProcess starts the binary with args and waits for its listening line.
func startProcess(t *testing.T, args ...string) *daemonProcess {
	t.Helper()
	p, err := tryStartProcess(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func tryStartProcess(t *testing.T, args ...string) (*daemonProcess, error) {
	t.Helper()
	cmd := exec.Command(sharedBinary(t), append([]string{"--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	return launchDaemon(t, cmd)
}

// launchDaemon starts cmd, the binary with --addr and JSON logs; it is
// killed when the test ends.
func launchDaemon(t *testing.T, cmd *exec.Cmd) (*daemonProcess, error) {
	t.Helper()
	p, err := testkit.TryLaunch(t, cmd, launch.Options{Name: "daemon", StartTimeout: 15 * time.Second})
	if err != nil {
		return nil, err
	}
	return &daemonProcess{Process: p, base: p.URL}, nil
}

// stop sends sig and waits for the process to exit.
func (p *daemonProcess) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	if err := p.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err, ok := p.Wait(15 * time.Second)
	if !ok {
		t.Fatalf("daemon did not exit within 15s of %v", sig)
	}
	return err
}

// call sends a JSON request and decodes a JSON answer into out (if not nil).
func (p *daemonProcess) call(method, path, body string, out any) (int, error) {
	req, err := http.NewRequest(method, p.base+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := processClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return res.StatusCode, fmt.Errorf("%s %s: %d %s: %w", method, path, res.StatusCode, data, err)
		}
	}
	return res.StatusCode, nil
}

// processClient bounds every call, so a wedged daemon fails the test
// instead of hanging it.
var processClient = &http.Client{Timeout: 30 * time.Second}

type elicitationView struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Status    string `json:"status"`
	Ending    string `json:"ending"`
	Directory string `json:"directory"`
	Result    *struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	} `json:"result"`
}

func formWithTimeout(timeout, directory string) string {
	fields := ""
	if timeout != "" {
		fields += `"timeout":"` + timeout + `",`
	}
	if directory != "" {
		fields += `"directory":"` + directory + `",`
	}
	return "{" + fields + strings.TrimPrefix(twoQuestions, "{")
}

func TestRestartKeepsPendingQuestions(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	dataDir := t.TempDir()
	first := startProcess(t, "--data-dir", dataDir)
	var ids []string
	for _, body := range []string{formWithTimeout("", "/srv/a"), formWithTimeout("", ""), formWithTimeout("1s", "")} {
		var e elicitationView
		if status, err := first.call(http.MethodPost, "/elicitations", body, &e); err != nil || status != http.StatusCreated {
			t.Fatalf("create: %d %v", status, err)
		}
		ids = append(ids, e.ID)
	}
	if err := first.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, first.Output())
	}
	time.Sleep(1100 * time.Millisecond) // let the third question's deadline pass while questiond is down

	second := startProcess(t, "--data-dir", dataDir)
	var listed []struct{ ID string }
	if _, err := second.call(http.MethodGet, "/question", "", &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].ID != ids[0] || listed[1].ID != ids[1] {
		t.Fatalf("after restart GET /question = %v, want %v in order", listed, ids[:2])
	}
	var expired elicitationView
	second.call(http.MethodGet, "/elicitations/"+ids[2], "", &expired)
	if expired.Status != "resolved" || expired.Ending != "timeout" || expired.Result == nil || expired.Result.Action != "cancel" {
		t.Fatalf("the question whose deadline passed while down: %+v", expired)
	}

	// A new event stream announces the questions that came back.
	streamClient := &http.Client{Timeout: 10 * time.Second} // a hang guard, not a speed limit
	stream, err := streamClient.Get(second.base + "/event")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	type announcement struct {
		Type       string
		Properties struct{ ID string }
	}
	events := testkit.Events[announcement](stream.Body, 8)
	var announced []string
	for f := range events {
		announced = append(announced, f.Type+" "+f.Properties.ID)
		if len(announced) == 3 {
			break
		}
	}
	want := []string{"server.connected ", "question.asked " + ids[0], "question.asked " + ids[1]}
	if strings.Join(announced, "|") != strings.Join(want, "|") {
		t.Fatalf("new stream after restart: %v, want %v", announced, want)
	}

	// A reply given after the restart reaches the agent that comes back for it.
	agent := make(chan elicitationView, 1)
	go func() {
		var e elicitationView
		_, _ = second.call(http.MethodGet, "/elicitations/"+ids[0]+"?wait=20s", "", &e)
		agent <- e
	}()
	if status, err := second.call(http.MethodPost, "/question/"+ids[0]+"/reply", `{"answers":[["SY365H"],["Low power"]]}`, nil); err != nil || status != 200 {
		t.Fatalf("reply after restart: %d %v", status, err)
	}
	got := <-agent
	if got.Result == nil || got.Result.Action != "accept" || string(got.Result.Content) != `{"model":"SY365H","symptoms":["Low power"]}` {
		t.Fatalf("agent got %+v after the restart", got)
	}
	if err := second.stop(t, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// And it is still there after one more restart.
	third := startProcess(t, "--data-dir", dataDir)
	var again elicitationView
	third.call(http.MethodGet, "/elicitations/"+ids[0], "", &again)
	if again.Ending != "replied" || string(again.Result.Content) != `{"model":"SY365H","symptoms":["Low power"]}` {
		t.Fatalf("the result did not survive another restart: %+v", again)
	}
}

func TestSecondDaemonOnOneDataDirRefusesToStart(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	dataDir := t.TempDir()
	startProcess(t, "--data-dir", dataDir)
	_, err := tryStartProcess(t, "--data-dir", dataDir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dataDir, "questiond.db")) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second daemon: %v", err)
	}
}

func TestCorruptDatabaseStopsStartWithoutWipingIt(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "questiond.db")
	garbage := bytes.Repeat([]byte("not a database "), 1000)
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := tryStartProcess(t, "--data-dir", dataDir)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("start on a corrupt file: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, garbage) {
		t.Fatal("the corrupt file was changed")
	}
}

// TestCrashLosesNothingAcknowledged kills the daemon with SIGKILL in the
// middle of a stream of creates, replies and rejects, restarts it, and checks
// every acknowledgement: each 201 is still pending or resolved, each
// "200 true" reply has its result, nothing is listed twice.
func TestCrashLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	dataDir := t.TempDir()
	p := startProcess(t, "--data-dir", dataDir)

	var (
		mu       sync.Mutex
		created  []string
		replied  = map[string]string{} // id → the content the agent must get
		rejected = map[string]bool{}
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	answers := []struct{ body, content string }{
		{`{"answers":[["SY215C"],["Black smoke"]]}`, `{"model":"SY215C","symptoms":["Black smoke"]}`},
		{`{"answers":[["SY365H"],[]]}`, `{"model":"SY365H"}`},
	}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var e elicitationView
				status, err := p.call(http.MethodPost, "/elicitations", twoQuestions, &e)
				if err != nil || status != http.StatusCreated {
					continue // not acknowledged: promises nothing
				}
				mu.Lock()
				created = append(created, e.ID)
				mu.Unlock()
				switch rng.IntN(3) {
				case 0: // leave it pending
				case 1:
					a := answers[rng.IntN(len(answers))]
					if status, err := p.call(http.MethodPost, "/question/"+e.ID+"/reply", a.body, nil); err == nil && status == 200 {
						mu.Lock()
						replied[e.ID] = a.content
						mu.Unlock()
					}
				case 2:
					if status, err := p.call(http.MethodPost, "/question/"+e.ID+"/reject", "", nil); err == nil && status == 200 {
						mu.Lock()
						rejected[e.ID] = true
						mu.Unlock()
					}
				}
			}
		}(w)
	}
	time.Sleep(1500 * time.Millisecond) // traffic runs against the real process
	p.Kill()
	close(stop)
	wg.Wait()
	if len(created) < 50 {
		t.Fatalf("only %d questions were acknowledged before the crash; the test proves little", len(created))
	}

	q := startProcess(t, "--data-dir", dataDir)
	var listed []struct{ ID string }
	if _, err := q.call(http.MethodGet, "/question", "", &listed); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, l := range listed {
		seen[l.ID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	for _, id := range created {
		var e elicitationView
		status, err := q.call(http.MethodGet, "/elicitations/"+id, "", &e)
		if err != nil || status != http.StatusOK {
			t.Errorf("acknowledged question %s lost: %d %v", id, status, err)
			continue
		}
		switch {
		case replied[id] != "":
			if e.Result == nil || e.Result.Action != "accept" || string(e.Result.Content) != replied[id] {
				t.Errorf("acknowledged reply to %s lost: %+v", id, e)
			}
		case rejected[id]:
			if e.Result == nil || e.Result.Action != "cancel" || e.Ending != "rejected" {
				t.Errorf("acknowledged reject of %s lost: %+v", id, e)
			}
		case e.Status == "pending":
			if seen[id] != 1 {
				t.Errorf("pending question %s is not listed", id)
			}
		}
	}
	t.Logf("%d questions acknowledged before SIGKILL, %d replies, %d rejects; %d pending after restart",
		len(created), len(replied), len(rejected), len(listed))
}
