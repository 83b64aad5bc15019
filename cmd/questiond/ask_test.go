package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// askRun is one `questiond ask` process.
type askRun struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr syncBuffer // read while the process runs
	done   chan struct{}
	status int
}

// stderrText is what the process has written to stderr so far.
func (a *askRun) stderrText() string { return a.stderr.String() }

// startAsk runs `questiond ask args…` with env as its only QUESTIOND_*
// settings (the test's own environment may not leak in) and stdin.
func startAsk(t *testing.T, env map[string]string, stdin string, args ...string) *askRun {
	t.Helper()
	a := &askRun{cmd: exec.Command(sharedBinary(t), append([]string{"ask"}, args...)...), done: make(chan struct{})}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "QUESTIOND_") {
			a.cmd.Env = append(a.cmd.Env, kv)
		}
	}
	for k, v := range env {
		a.cmd.Env = append(a.cmd.Env, k+"="+v)
	}
	a.cmd.Stdin = strings.NewReader(stdin)
	a.cmd.Stdout, a.cmd.Stderr = &a.stdout, &a.stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(a.done)
		err := a.cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			a.status = exit.ExitCode()
		default:
			a.status = -1
		}
	}()
	t.Cleanup(func() { _ = a.cmd.Process.Kill(); <-a.done })
	return a
}

// wait returns the exit status, failing the test if the process hangs.
// expectOutput waits for the process and fails the test unless it exited
// 0 having printed the line want on stdout.
func (a *askRun) expectOutput(t *testing.T, want string) {
	t.Helper()
	if status := a.wait(t); status != 0 {
		t.Fatalf("exit %d, want 0; stderr: %s", status, a.stderr.String())
	}
	if got := a.stdout.String(); got != want+"\n" {
		t.Fatalf("stdout %q, want %q", got, want+"\n")
	}
}

func (a *askRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-a.done:
		return a.status
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
		t.Fatalf("questiond ask did not exit within 30s; stderr: %s", a.stderr.String())
		return -1
	}
}

// runAsk runs `questiond ask` to its end.
func runAsk(t *testing.T, env map[string]string, stdin string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	a := startAsk(t, env, stdin, args...)
	status = a.wait(t)
	return status, a.stdout.String(), a.stderr.String()
}

type listedQuestion struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Questions []struct {
		Question string `json:"question"`
		Header   string `json:"header"`
		Multiple bool   `json:"multiple"`
		Options  []struct {
			Label string `json:"label"`
		} `json:"options"`
	} `json:"questions"`
}

// pendingQuestions is what an operator's GET /question lists (query is
// appended as is, e.g. "?directory=/srv/a").
func pendingQuestions(t *testing.T, d *daemonProcess, query string) []listedQuestion {
	t.Helper()
	var listed []listedQuestion
	if status, err := d.call(http.MethodGet, "/question"+query, "", &listed); err != nil || status != http.StatusOK {
		t.Fatalf("GET /question%s: %d %v", query, status, err)
	}
	return listed
}

// awaitQuestion polls GET /question until the asking process's question is
// listed, as an operator's client would; it fails if the process ends first.
func awaitQuestion(t *testing.T, d *daemonProcess, a *askRun, query string) listedQuestion {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if listed := pendingQuestions(t, d, query); len(listed) > 0 {
			if len(listed) > 1 {
				t.Fatalf("%d questions listed, want one: %+v", len(listed), listed)
			}
			return listed[0]
		}
		select {
		case <-a.done:
			t.Fatalf("questiond ask exited %d before its question was listed; stderr: %s", a.status, a.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no question listed within 15s; stderr: %s", a.stderr.String())
	return listedQuestion{}
}

// operator posts a reply or reject as an OpenCode client does.
func operator(t *testing.T, d *daemonProcess, path, body string) {
	t.Helper()
	if status, err := d.call(http.MethodPost, path, body, nil); err != nil || status != http.StatusOK {
		t.Fatalf("POST %s %s: %d %v", path, body, status, err)
	}
}

func askDaemon(t *testing.T) (*daemonProcess, map[string]string) {
	t.Helper()
	testenv.Heavy(t, "runs the real binary")
	d := startProcess(t, "--store", "memory")
	return d, map[string]string{"QUESTIOND_SERVER": d.base}
}

func TestAskAcceptPrintsTheElicitResult(t *testing.T) {
	t.Parallel()
	d, _ := askDaemon(t)
	a := startAsk(t, nil, "", "--server", d.base, "--message", "Deploy to which region?",
		"--choose", "eu-west, us-east ,ap-south", "--title", "Region", "--session", "ses_script1", "--directory", "/srv/app")
	q := awaitQuestion(t, d, a, "?directory=/srv/app")
	if q.SessionID != "ses_script1" || len(q.Questions) != 1 || q.Questions[0].Header != "Region" ||
		!strings.Contains(q.Questions[0].Question, "Deploy to which region?") || q.Questions[0].Multiple {
		t.Fatalf("the operator sees %+v", q)
	}
	var labels []string
	for _, o := range q.Questions[0].Options {
		labels = append(labels, o.Label)
	}
	if strings.Join(labels, "|") != "eu-west|us-east|ap-south" {
		t.Fatalf("options %v, want the --choose values trimmed, in order", labels)
	}
	if other := pendingQuestions(t, d, "?directory=/srv/other"); len(other) != 0 {
		t.Fatalf("--directory was not sent: another directory lists %+v", other)
	}
	operator(t, d, "/question/"+q.ID+"/reply", `{"answers":[["us-east"]]}`)
	a.expectOutput(t, `{"action":"accept","content":{"answer":"us-east"}}`)
}

func TestAskSchemaFromStdinWithContentOnly(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	schema := `{"type":"object","properties":{
		"replicas":{"type":"integer","title":"Replicas","minimum":1},
		"tags":{"type":"array","title":"Tags","items":{"type":"string","enum":["canary","<blue>"]}},
		"notify":{"type":"boolean","title":"Notify"}},"required":["replicas"]}`
	a := startAsk(t, env, schema, "--message", "Scale up?", "--schema", "-", "--content")
	q := awaitQuestion(t, d, a, "")
	if len(q.Questions) != 3 {
		t.Fatalf("the operator sees %d questions, want 3: %+v", len(q.Questions), q)
	}
	operator(t, d, "/question/"+q.ID+"/reply", `{"answers":[["3"],["canary","<blue>"],["Yes"]]}`)
	a.expectOutput(t, `{"notify":true,"replicas":3,"tags":["canary","<blue>"]}`)
}

func TestAskSchemaFromFile(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte(`{"type":"object","properties":{"why":{"type":"string","title":"Why"}},"required":["why"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAsk(t, env, "", "--message", "Explain", "--schema", file)
	q := awaitQuestion(t, d, a, "")
	operator(t, d, "/question/"+q.ID+"/reply", `{"answers":[["because, \"quoted\""]]}`)
	a.expectOutput(t, `{"action":"accept","content":{"why":"because, \"quoted\""}}`)
}

func TestAskQuickQuestionKinds(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	for _, c := range []struct {
		name    string
		args    []string
		answers string
		want    string
	}{
		{"choose-many", []string{"--choose-many", "lint,test,bench", "--key", "steps"}, `[["lint","bench"]]`, `{"steps":["lint","bench"]}`},
		{"text", []string{"--text", "--title", "Reason"}, `[["flaky network"]]`, `{"answer":"flaky network"}`},
		{"confirm", []string{"--confirm", "--key", "go"}, `[["No"]]`, `{"go":false}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := startAsk(t, env, "", append([]string{"--message", "Quick " + c.name, "--content"}, c.args...)...)
			q := awaitQuestion(t, d, a, "")
			if c.name == "choose-many" && !q.Questions[0].Multiple {
				t.Errorf("--choose-many is not a multiple-choice question: %+v", q)
			}
			if c.name == "text" && q.Questions[0].Header != "Reason" {
				t.Errorf("--title did not become the header: %+v", q)
			}
			operator(t, d, "/question/"+q.ID+"/reply", `{"answers":`+c.answers+`}`)
			a.expectOutput(t, c.want)
		})
	}
}

func TestAskDeclineExits3(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	a := startAsk(t, env, "", "--message", "Ship it?", "--confirm")
	q := awaitQuestion(t, d, a, "")
	operator(t, d, "/question/"+q.ID+"/reject", `{"action":"decline"}`)
	if status := a.wait(t); status != 3 {
		t.Fatalf("exit %d, want 3; stderr: %s", status, a.stderr.String())
	}
	if got := a.stdout.String(); got != `{"action":"decline"}`+"\n" {
		t.Fatalf("stdout %q", got)
	}
}

func TestAskCancelExits4(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	t.Run("rejected", func(t *testing.T) {
		a := startAsk(t, env, "", "--message", "Ship it?", "--confirm")
		q := awaitQuestion(t, d, a, "")
		operator(t, d, "/question/"+q.ID+"/reject", "")
		if status := a.wait(t); status != 4 {
			t.Fatalf("exit %d, want 4; stderr: %s", status, a.stderr.String())
		}
		if got := a.stdout.String(); got != `{"action":"cancel"}`+"\n" {
			t.Fatalf("stdout %q", got)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		status, stdout, stderr := runAsk(t, env, "", "--message", "Anyone?", "--text", "--timeout", "1s", "--content")
		if status != 4 || stdout != "" {
			t.Fatalf("exit %d with stdout %q, want 4 and nothing printed (--content); stderr: %s", status, stdout, stderr)
		}
		if took := time.Since(start); took < time.Second {
			t.Fatalf("ended after %s, before its 1s timeout", took)
		}
		if left := pendingQuestions(t, d, ""); len(left) != 0 {
			t.Fatalf("the timed-out question is still listed: %+v", left)
		}
	})
}

func TestAskServerErrorsExit1WithTheServersMessage(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	// The daemon refuses an object-typed property; the message names it.
	status, stdout, stderr := runAsk(t, env, `{"type":"object","properties":{"deep":{"type":"object"}}}`,
		"--message", "Nested?", "--schema", "-")
	if status != 1 || stdout != "" || !strings.Contains(stderr, "400") || !strings.Contains(stderr, "deep") {
		t.Fatalf("bad schema: exit %d, stdout %q, stderr %q; want 1 and the server's message naming the property", status, stdout, stderr)
	}
	// --session is checked by the daemon too.
	status, _, stderr = runAsk(t, env, "", "--message", "Hi", "--text", "--session", "not-a-session")
	if status != 1 || !strings.Contains(stderr, "sessionID") {
		t.Fatalf("bad --session: exit %d, stderr %q", status, stderr)
	}
	if left := pendingQuestions(t, d, ""); len(left) != 0 {
		t.Fatalf("refused questions were created: %+v", left)
	}
}

func TestAskTokens(t *testing.T) {
	testenv.Heavy(t, "runs the real binary")
	const token = "ask-token-0123456789"
	t.Setenv("QUESTIOND_AGENT_TOKENS", "script="+token) // the daemon inherits it
	d := startProcess(t, "--store", "memory")

	for name, env := range map[string]map[string]string{
		"none":  {"QUESTIOND_SERVER": d.base},
		"wrong": {"QUESTIOND_SERVER": d.base, "QUESTIOND_TOKEN": "not-the-token-0123456"},
	} {
		status, stdout, stderr := runAsk(t, env, "", "--message", "Hi", "--text")
		if status != 1 || stdout != "" || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "Bearer") {
			t.Errorf("%s token: exit %d, stdout %q, stderr %q; want 1 and the daemon's 401 message", name, status, stdout, stderr)
		}
		if strings.Contains(stderr, "not-the-token") {
			t.Errorf("%s token: stderr shows the token: %q", name, stderr)
		}
	}

	// Server and token from the environment only.
	a := startAsk(t, map[string]string{"QUESTIOND_SERVER": d.base, "QUESTIOND_TOKEN": token}, "", "--message", "Hi", "--choose", "a,b,c")
	q := awaitQuestion(t, d, a, "")
	operator(t, d, "/question/"+q.ID+"/reply", `{"answers":[["c"]]}`)
	if status := a.wait(t); status != 0 || a.stdout.String() != `{"action":"accept","content":{"answer":"c"}}`+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", status, a.stdout.String(), a.stderr.String())
	}

	// Flags win over the environment.
	status, _, stderr := runAsk(t, map[string]string{"QUESTIOND_SERVER": "http://127.0.0.1:1", "QUESTIOND_TOKEN": token},
		"", "--server", d.base, "--token", "flag-token-wrong-01234", "--message", "Hi", "--text")
	if status != 1 || !strings.Contains(stderr, "401") {
		t.Fatalf("--server/--token over the environment: exit %d, stderr %q; want the daemon's 401 for the flag's token", status, stderr)
	}
}

func TestAskInterruptWithdrawsTheQuestion(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			a := startAsk(t, env, "", "--message", "Wait for me", "--text")
			awaitQuestion(t, d, a, "")
			if err := a.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if status := a.wait(t); status != 1 || !strings.Contains(a.stderr.String(), "interrupted; the question was withdrawn") {
				t.Fatalf("exit %d, stderr %q; want 1 and the interruption named", status, a.stderr.String())
			}
			if a.stdout.Len() != 0 {
				t.Fatalf("stdout %q", a.stdout.String())
			}
			if left := pendingQuestions(t, d, ""); len(left) != 0 {
				t.Fatalf("the question is still pending after %v: %+v", sig, left)
			}
		})
	}
}

// A daemon that cannot be reached is said so on stderr, not waited for in
// silence; an interrupt still ends the wait.
func TestAskUnreachableDaemonIsNamedAndInterruptible(t *testing.T) {
	testenv.Heavy(t, "runs the real binary")
	closed := "http://" + freeAddr(t)
	a := startAsk(t, map[string]string{"QUESTIOND_SERVER": closed}, "", "--message", "Anyone?", "--text")
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(a.stderrText(), closed+" is not answering") {
		if time.Now().After(deadline) {
			t.Fatalf("no notice within 15s; stderr %q", a.stderrText())
		}
		select {
		case <-a.done:
			t.Fatalf("exited %d instead of waiting; stderr %q", a.status, a.stderrText())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := a.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if status := a.wait(t); status != 1 || !strings.Contains(a.stderr.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q", status, a.stderr.String())
	}
}

func TestAskUsageErrorsExit2AndAskNothing(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	missing := filepath.Join(t.TempDir(), "missing.json")
	notJSON := filepath.Join(t.TempDir(), "schema.txt")
	if err := os.WriteFile(notJSON, []byte("properties: {}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"--choose", "a,b"}, "", "--message is required"},
		{[]string{"--message", "Hi"}, "", "no question"},
		{[]string{"--message", "Hi", "--schema", "-", "--choose", "a,b"}, "{}", "--schema and --choose do not go together"},
		{[]string{"--message", "Hi", "--text", "--confirm"}, "", "--confirm and --text do not go together"},
		{[]string{"--message", "Hi", "--schema", missing}, "", missing},
		{[]string{"--message", "Hi", "--schema", notJSON}, "", "not a JSON object"},
		{[]string{"--message", "Hi", "--schema", "-"}, "[1,2]", "stdin is not a JSON object"},
		{[]string{"--message", "Hi", "--schema", "-", "--key", "k"}, "{}", "--key and --title belong to a quick question"},
		{[]string{"--message", "Hi", "--choose", "a,,b"}, "", `--choose "a,,b" has an empty value`},
		{[]string{"--message", "Hi", "--choose-many", ""}, "", "--choose-many"},
		{[]string{"--message", "Hi", "--choose", "a,a"}, "", "--choose"},
		{[]string{"--message", "Hi", "--text", "--key", " "}, "", "--key must not be empty"},
		{[]string{"--message", "Hi", "--confirm", "--title", ""}, "", "--title must not be empty"},
		{[]string{"--message", "Hi", "--text", "--timeout", "soon"}, "", "-timeout"},
		{[]string{"--message", "Hi", "--text", "--timeout", "-5s"}, "", "--timeout must be positive"},
		{[]string{"--message", "Hi", "--text", "--frobnicate"}, "", "frobnicate"},
		{[]string{"--message", "Hi", "--text", "extra"}, "", `unexpected argument "extra"`},
		{[]string{"--message", "Hi", "--text", "--server", "::not a url"}, "", "--server"},
	} {
		status, stdout, stderr := runAsk(t, env, c.stdin, c.args...)
		if status != 2 || stdout != "" || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "questiond ask --help") ||
			strings.Contains(stderr, "Exit status:") {
			t.Errorf("ask %q: exit %d, stdout %q, stderr %q; want 2 and a short message containing %q", c.args, status, stdout, stderr, c.want)
		}
	}
	if left := pendingQuestions(t, d, ""); len(left) != 0 {
		t.Fatalf("a usage error still asked: %+v", left)
	}
}

func TestAskHelpDocumentsExitStatuses(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	status, stdout, stderr := runAsk(t, nil, "", "--help")
	if status != 0 || stdout != "" || strings.Count(stderr, "Exit status:") != 1 {
		t.Fatalf("--help: exit %d, stdout %q, stderr %q; want 0 and the help once", status, stdout, stderr)
	}
	for _, want := range []string{
		"0  accept", "3  decline", "4  cancel", "1  error", "2  usage", "interrupted; the question was withdrawn",
		"--message", "--schema", "--choose", "--choose-many", "--text", "--confirm", "--title", "--key",
		"--server", "QUESTIOND_SERVER", "--token", "QUESTIOND_TOKEN", "--timeout", "--session", "--directory", "--content",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

// The daemon's own command line is unchanged: "ask" is only a subcommand
// in first position.
func TestAskIsOnlyAFirstArgument(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "runs the real binary")
	out, err := exec.Command(sharedBinary(t), "--store", "memory", "ask").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), `unexpected argument "ask"`) {
		t.Fatalf("questiond --store memory ask: %v\n%s", err, out)
	}
}

// An accept is printed exactly as the daemon's content says, for any value
// JSON can carry.
func TestAskPrintsContentUnchanged(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	a := startAsk(t, env, `{"type":"object","properties":{"n":{"type":"number"},"s":{"type":"string"}},"required":["n","s"]}`,
		"--message", "Numbers", "--schema", "-")
	q := awaitQuestion(t, d, a, "")
	operator(t, d, "/question/"+q.ID+"/reply", `{"answers":[["0.000001"],["a & b <c> ü \\ \"q\""]]}`)
	if status := a.wait(t); status != 0 {
		t.Fatalf("exit %d; stderr: %s", status, a.stderr.String())
	}
	var got struct {
		Action  string
		Content map[string]any
	}
	if err := json.Unmarshal(a.stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout %q is not JSON: %v", a.stdout.String(), err)
	}
	if got.Content["n"] != 0.000001 || got.Content["s"] != `a & b <c> ü \ "q"` {
		t.Fatalf("content %v", got.Content)
	}
	if strings.Contains(a.stdout.String(), `\u0026`) {
		t.Fatalf("stdout escapes HTML for no reader that needs it: %q", a.stdout.String())
	}
}

// A quick question asked without --title is headed by the first words of
// its message, and its text under the message is not the bare key: before,
// --confirm showed the operator the header "answer" and "answer (Yes or
// No)". --key still names the answer's key.
func TestAskQuickQuestionWithoutTitleIsHeadedByItsMessage(t *testing.T) {
	t.Parallel()
	d, env := askDaemon(t)
	for _, c := range []struct {
		kind    []string
		message string
		header  string
		answers string
		want    string
	}{
		{[]string{"--confirm"}, "Deploy build 1234?\nIt passed every check.", "Deploy build 1234", `[["Yes"]]`, `{"answer":true}`},
		{[]string{"--text", "--key", "why"}, "Why did the nightly run fail on the arm64 builders?", "Why did the nightly run", `[["disk full"]]`, `{"why":"disk full"}`},
		{[]string{"--choose", "a,b"}, "\n  Supercalifragilisticexpialidocious-release: pick", "Supercalifragilisticexp…", `[["b"]]`, `{"answer":"b"}`},
	} {
		t.Run(c.kind[0], func(t *testing.T) {
			a := startAsk(t, env, "", append([]string{"--message", c.message, "--content"}, c.kind...)...)
			q := awaitQuestion(t, d, a, "")
			got := q.Questions[0]
			if got.Header != c.header {
				t.Errorf("header %q, want %q from the message", got.Header, c.header)
			}
			if strings.Contains(got.Question, "\n\nanswer") || strings.Contains(got.Question, "\n\nwhy") {
				t.Errorf("the question shows the operator its key: %q", got.Question)
			}
			if firstLine := strings.SplitN(strings.TrimSpace(c.message), "\n", 2)[0]; !strings.Contains(got.Question, firstLine) {
				t.Errorf("the question lost the message: %q", got.Question)
			}
			operator(t, d, "/question/"+q.ID+"/reply", `{"answers":`+c.answers+`}`)
			if status := a.wait(t); status != 0 {
				t.Fatalf("exit %d; stderr: %s", status, a.stderr.String())
			}
			if out := a.stdout.String(); out != c.want+"\n" {
				t.Fatalf("stdout %q, want %q", out, c.want)
			}
		})
	}
}
