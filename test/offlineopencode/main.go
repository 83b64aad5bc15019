// Command offlineopencode runs the real OpenCode (`opencode serve`, the
// pinned release of internal/opencodenpm) offline on loopback, its only
// model the scripted fake of internal/fakellm, for the Node suites of
// test/ that put questiond --upstream in front of it
// (QUESTIOND_TEST_UPSTREAM=opencode; see test/opencode.mjs).
//
//	offlineopencode            run one OpenCode server until stdin closes
//	offlineopencode -install   install the pinned OpenCode (once, into the
//	                           user's cache) and print its path
//
// Each run has a project, home and XDG directories of its own (an empty
// OpenCode), removed when it ends. The server gets this process's
// OPENCODE_SERVER_PASSWORD and OPENCODE_SERVER_USERNAME, and nothing else of
// its OpenCode settings. Once it listens, one JSON line on stdout says where
// and what the fake model answers (ready). It runs until its stdin closes
// (so it never outlives the test that started it, however that test ends)
// or it gets SIGINT or SIGTERM; it then stops OpenCode (its whole process
// group, killed 15 s after SIGTERM) and exits 0. When OpenCode fails to
// start or exits by itself, it exits 1 and writes OpenCode's output to
// stderr.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/questiond/questiond/internal/fakellm"
	"github.com/questiond/questiond/internal/opencodenpm"
	"github.com/questiond/questiond/internal/testkit/opencodeserve"
)

// startTimeout bounds OpenCode's start (seconds on an idle machine).
const startTimeout = 90 * time.Second

// stopTimeout is how long OpenCode has after SIGTERM before it is killed.
const stopTimeout = 15 * time.Second

// ready is the line printed on stdout once OpenCode listens: its URL and
// pid, and what its fake model does, so that the tests name no constant of
// their own.
type ready struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
	// Model is the model every prompt must name: "fake/<id>".
	Model struct {
		ProviderID string `json:"providerID"`
		ModelID    string `json:"modelID"`
	} `json:"model"`
	// AskPrompt in a prompt makes the model call OpenCode's question tool
	// with Question (its arguments); any other prompt is answered with
	// Answer, a session's title with Title.
	AskPrompt string         `json:"askPrompt"`
	Question  map[string]any `json:"question"`
	Answer    string         `json:"answer"`
	Title     string         `json:"title"`
}

func main() {
	install := flag.Bool("install", false, "install the pinned OpenCode (opencode-ai@"+opencodenpm.Pinned+") if missing, print its path and exit")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: offlineopencode [-install]")
		os.Exit(2)
	}
	bin, err := opencodenpm.Install(opencodenpm.Pinned, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "offlineopencode: "+format+"\n", args...)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "offlineopencode:", err)
		os.Exit(1)
	}
	if *install {
		fmt.Println(bin)
		return
	}
	os.Exit(run(bin, os.Stdin, os.Stdout, os.Stderr))
}

// script is the fake model: a title when asked for one (no tools offered),
// OpenCode's question tool on a user's prompt holding AskPrompt, else
// Answer's text.
func script(r fakellm.Request) fakellm.Reply {
	switch {
	case len(r.Tools) == 0:
		return fakellm.Reply{Text: fakellm.TitleText}
	case r.LastRole() == "user" && r.Offers(opencodeserve.QuestionTool) &&
		bytes.Contains(r.Messages[len(r.Messages)-1].Content, []byte(opencodeserve.AskPrompt)):
		return fakellm.Reply{Tool: opencodeserve.QuestionTool, Args: opencodeserve.QuestionArgs()}
	default:
		return fakellm.Reply{Text: opencodeserve.Answer}
	}
}

// run serves OpenCode until stdin closes or a signal comes, and returns
// the exit status.
func run(bin string, stdin io.Reader, stdout, stderr io.Writer) int {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)

	llm, err := fakellm.Start(script)
	if err != nil {
		fmt.Fprintln(stderr, "offlineopencode:", err)
		return 1
	}
	defer llm.Close()
	root, err := os.MkdirTemp("", "offlineopencode-")
	if err != nil {
		fmt.Fprintln(stderr, "offlineopencode:", err)
		return 1
	}
	defer os.RemoveAll(root)

	cmd, err := command(bin, root, llm)
	if err != nil {
		fmt.Fprintln(stderr, "offlineopencode:", err)
		return 1
	}
	out := &output{}
	listening := make(chan string, 1)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "offlineopencode:", err)
		return 1
	}
	cmd.Stderr = cmd.Stdout // one stream: the listening line is on either
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "offlineopencode: starting OpenCode:", err)
		return 1
	}
	exited := make(chan struct{})
	go func() {
		watchOutput(pipe, out, listening)
		_ = cmd.Wait()
		close(exited)
	}()
	defer stop(cmd, exited, stderr)

	var url string
	select {
	case url = <-listening:
	case <-exited:
		fmt.Fprintf(stderr, "offlineopencode: OpenCode exited before listening (%v); its output:\n%s", cmd.ProcessState, out)
		return 1
	case <-time.After(startTimeout):
		fmt.Fprintf(stderr, "offlineopencode: OpenCode did not listen within %v; its output:\n%s", startTimeout, out)
		return 1
	case sig := <-signals:
		fmt.Fprintf(stderr, "offlineopencode: %v while OpenCode started\n", sig)
		return 0
	}
	line := ready{URL: url, PID: cmd.Process.Pid, AskPrompt: opencodeserve.AskPrompt,
		Question: opencodeserve.QuestionArgs(), Answer: opencodeserve.Answer, Title: fakellm.TitleText}
	line.Model.ProviderID, line.Model.ModelID = "fake", fakellm.ModelID
	data, _ := json.Marshal(line) // strings and maps of strings: cannot fail
	fmt.Fprintf(stdout, "%s\n", data)

	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(closed)
	}()
	select {
	case <-closed:
	case <-signals:
	case <-exited:
		fmt.Fprintf(stderr, "offlineopencode: OpenCode exited (%v); its output:\n%s", cmd.ProcessState, out)
		return 1
	}
	return 0
}

// command is `opencode serve` on a free loopback port, in a project (a git
// repository, as OpenCode's projects usually are: without one its first
// turn takes seconds longer) of its own under root whose only model is
// llm, with the offline environment and this process's OpenCode
// credentials. OpenCode runs in a process group of its own, stopped as a
// whole, and is killed if this process dies first.
func command(bin, root string, llm *fakellm.Server) (*exec.Cmd, error) {
	env, err := opencodenpm.OfflineEnv(root)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"OPENCODE_SERVER_PASSWORD", "OPENCODE_SERVER_USERNAME"} {
		if value, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+value)
		}
	}
	project := filepath.Join(root, "project")
	config := map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"model": "fake/" + fakellm.ModelID, "small_model": "fake/" + fakellm.ModelID, "enabled_providers": []string{"fake"},
		"provider": map[string]any{"fake": llm.Config()},
	}
	data, _ := json.MarshalIndent(config, "", "  ") // maps of strings and numbers: cannot fail
	if err := os.MkdirAll(project, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(project, "opencode.json"), data, 0o644); err != nil {
		return nil, err
	}
	if git, err := exec.LookPath("git"); err == nil {
		_ = exec.Command(git, "-C", project, "init", "-q").Run()
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--port", port, "--hostname", "127.0.0.1")
	cmd.Dir, cmd.Env = project, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// freePort is a loopback port free a moment ago. OpenCode's --port 0 means
// 4096 when that is free, so that two servers one after the other (the
// suites' modes) would have one address, and a client's kept-alive
// connection to the first would be reused for the second and reset.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for OpenCode: %w", err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// listeningLine is how OpenCode says where it listens.
var listeningLine = regexp.MustCompile(`opencode server listening on (http://\S+)`)

// watchOutput keeps r's lines in out and sends the URL of OpenCode's
// listening line to listening, until r ends.
func watchOutput(r io.Reader, out *output, listening chan<- string) {
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 64*1024), 1024*1024)
	for lines.Scan() {
		out.add(lines.Text())
		if m := listeningLine.FindStringSubmatch(lines.Text()); m != nil {
			select {
			case listening <- m[1]:
			default:
			}
		}
	}
	_, _ = io.Copy(io.Discard, r) // a line too long for the scanner
}

// stop ends OpenCode's process group: SIGTERM, then SIGKILL if OpenCode
// has not exited stopTimeout later. The group is killed in any case, so
// that nothing OpenCode started outlives it.
func stop(cmd *exec.Cmd, exited <-chan struct{}, stderr io.Writer) {
	group := -cmd.Process.Pid
	if err := syscall.Kill(group, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		fmt.Fprintln(stderr, "offlineopencode: stopping OpenCode:", err)
	}
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		fmt.Fprintf(stderr, "offlineopencode: OpenCode still running %v after SIGTERM; killing it\n", stopTimeout)
	}
	_ = syscall.Kill(group, syscall.SIGKILL)
	<-exited
}

// output is the last lines OpenCode wrote, for the error that says why it
// failed.
type output struct {
	mu    sync.Mutex
	lines []string
}

const keptLines = 200

func (o *output) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, line)
	if len(o.lines) > keptLines {
		o.lines = o.lines[len(o.lines)-keptLines:]
	}
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b bytes.Buffer
	for _, l := range o.lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}
