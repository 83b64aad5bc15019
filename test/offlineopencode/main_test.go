package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/opencodenpm"
	"github.com/questiond/questiond/internal/testenv"
)

// roleEnv makes the test binary run main instead of the tests: the
// command under test, started as a process by the tests.
const roleEnv = "OFFLINEOPENCODE_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// OpenCode serves with the credentials offlineopencode was given, in a
// project of its own, until offlineopencode's stdin closes or it gets
// SIGTERM, or it is killed; then nothing of it is left: not OpenCode's
// process and, unless offlineopencode was killed, not its directory.
func TestServesUntilStdinClosesOrASignal(t *testing.T) {
	testenv.Heavy(t, "runs the real OpenCode")
	if _, err := opencodenpm.Install(opencodenpm.Pinned, t.Logf); err != nil {
		if _, lookErr := exec.LookPath("npm"); lookErr != nil {
			testenv.Missing(t, "npm (to install opencode-ai@"+opencodenpm.Pinned+")", "install Node.js 20 and npm")
		}
		t.Fatal(err)
	}
	for _, end := range []string{"stdin closed", "SIGTERM", "SIGKILL"} {
		t.Run(end, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), roleEnv+"=1",
				"OPENCODE_SERVER_USERNAME=ops", "OPENCODE_SERVER_PASSWORD=secret:1")
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})

			r := readyLine(t, stdout, &stderr)
			project, err := os.Readlink("/proc/" + strconv.Itoa(r.PID) + "/cwd")
			if err != nil || filepath.Base(project) != "project" {
				t.Fatalf("OpenCode (pid %d) runs in %q (%v), want a project directory of its own", r.PID, project, err)
			}
			if status, _ := health(t, r.URL, ""); status != http.StatusUnauthorized {
				t.Fatalf("GET /global/health without credentials: %d, want 401 (OpenCode has the password)", status)
			}
			status, body := health(t, r.URL, "ops:secret:1")
			if status != http.StatusOK || !strings.Contains(body, `"version":"`+opencodenpm.Pinned+`"`) {
				t.Fatalf("GET /global/health with the credentials: %d %s, want OpenCode %s", status, body, opencodenpm.Pinned)
			}
			if r.Model.ProviderID != "fake" || r.AskPrompt == "" || r.Answer == "" {
				t.Fatalf("the ready line says too little of the fake model: %+v", r)
			}

			switch end {
			case "stdin closed":
				_ = stdin.Close()
			case "SIGTERM":
				_ = cmd.Process.Signal(syscall.SIGTERM)
			case "SIGKILL":
				_ = cmd.Process.Kill()
			}
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				if end != "SIGKILL" && err != nil {
					t.Fatalf("offlineopencode exited with %v after %s, want 0; stderr:\n%s", err, end, stderr.String())
				}
			case <-time.After(stopTimeout + 10*time.Second):
				t.Fatalf("offlineopencode still running after %s", end)
			}
			gone(t, r.PID)
			if end != "SIGKILL" {
				if _, err := os.Stat(filepath.Dir(project)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("OpenCode's directory %s is left behind (%v)", filepath.Dir(project), err)
				}
			} else {
				_ = os.RemoveAll(filepath.Dir(project)) // a killed process cannot clean up
			}
		})
	}
}

// readyLine reads offlineopencode's first line on stdout.
func readyLine(t *testing.T, stdout io.Reader, stderr *strings.Builder) ready {
	t.Helper()
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		var r ready
		if err := json.Unmarshal([]byte(line), &r); err != nil || !strings.HasPrefix(r.URL, "http://127.0.0.1:") || r.PID == 0 {
			t.Fatalf("ready line %q (%v); stderr:\n%s", line, err, stderr.String())
		}
		return r
	case <-time.After(startTimeout + 10*time.Second):
		t.Fatalf("no ready line; stderr:\n%s", stderr.String())
	}
	return ready{}
}

// health is OpenCode's answer to GET /global/health with Basic
// credentials user:password, if any.
func health(t *testing.T, url, credentials string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/global/health", nil)
	if user, password, ok := strings.Cut(credentials, ":"); ok {
		req.SetBasicAuth(user, password)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// gone waits until pid has ended: no such process, or a zombie not yet
// reaped by whoever inherited it.
func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		// The state follows the command's name, which is in parentheses.
		if err != nil || strings.HasPrefix(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), " Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("OpenCode (pid %d) still runs", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
