package docs

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit"
)

// section is the text of a markdown page from the line heading to the next
// heading of its level.
func section(t *testing.T, text, heading string) string {
	t.Helper()
	start := strings.Index("\n"+text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	rest := text[start+len(heading)+1:]
	level := heading[:strings.Index(heading, " ")+1]
	if end := strings.Index(rest, "\n"+level); end >= 0 {
		rest = rest[:end+1]
	}
	return rest
}

// shellBlocks are the ```sh blocks of text, in order.
func shellBlocks(text string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// shapes are the output a shell block documents: its comment lines that
// show JSON or true/false, as patterns of a whole line of output where
// "…" stands for anything.
func shapes(block string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, line := range strings.Split(block, "\n") {
		shown, ok := strings.CutPrefix(strings.TrimSpace(line), "# ")
		if !ok || !(strings.HasPrefix(shown, "{") || strings.HasPrefix(shown, "[") || shown == "true" || shown == "false") {
			continue
		}
		pattern := strings.ReplaceAll(regexp.QuoteMeta(shown), "…", ".*")
		out = append(out, regexp.MustCompile("(?m)^"+pattern+"$"))
	}
	return out
}

// copyRepository copies the files git knows of (tracked, and new ones not
// ignored) from the repository at src into dst, as a fresh clone of this
// tree would have them.
func copyRepository(t *testing.T, src, dst string) {
	t.Helper()
	var names []string
	if out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output(); err == nil {
		names = strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	} else { // not a git work tree (an unpacked archive): every file but what builds leave
		err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name, _ := filepath.Rel(src, path)
			switch {
			case d.IsDir() && (name == ".git" || name == "bin" || name == "artifacts" || d.Name() == "node_modules"):
				return filepath.SkipDir
			case !d.IsDir():
				names = append(names, name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		from, to := filepath.Join(src, name), filepath.Join(dst, name)
		info, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			link, err := os.Readlink(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(link, to); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is output written by a process and read by the test.
type syncBuffer = testkit.SyncBuffer

// A newcomer follows the README and nothing else, on a copy of the
// repository: the daemon line of "Set up" in the background (its default
// address moved to a free port, as a second terminal would find it on
// 4097), the install line with GOBIN in a temporary directory, and every
// shell block of the walkthrough in order — a block still running after a
// few seconds (questiond ask, waiting for the operator) goes on in the
// background as it would in its own terminal. Each block exits 0 and
// prints what its comments show ("…" standing for anything). The README is
// the front door: the newcomer lost half an hour where it misled.
func TestNewcomerFollowsTheReadme(t *testing.T) {
	testenv.Heavy(t, "builds questiond in a copy of the repository and runs the README's commands")
	for _, tool := range []string{"bash", "curl", "sed", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "apt-get install "+tool)
		}
	}
	readme := read(t, "README.md")
	if lines := strings.Count(readme, "\n"); lines > 250 {
		t.Errorf("README.md has %d lines; a front door has at most 250", lines)
	}
	setUp := shellBlocks(section(t, readme, "## Set up"))
	install := shellBlocks(section(t, readme, "## Install the `questiond` command"))
	walk := shellBlocks(section(t, readme, "## A two-minute walkthrough"))
	if len(setUp) != 1 || len(install) != 1 || len(walk) == 0 {
		t.Fatalf("README: %d set-up, %d install and %d walkthrough shell blocks; want one, one and some", len(setUp), len(install), len(walk))
	}
	var daemonLine string
	for _, line := range strings.Split(setUp[0], "\n") {
		if strings.Contains(line, "cmd/questiond") {
			daemonLine, _, _ = strings.Cut(line, "#")
		}
	}
	installLine := strings.Split(install[0], "\n")[0]
	if !strings.HasPrefix(strings.TrimSpace(daemonLine), "go run ") || !strings.HasPrefix(installLine, "go install ") {
		t.Fatalf("README: the daemon line is %q and the install line %q; want go run and go install", daemonLine, installLine)
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	clone, gobin, state := filepath.Join(tmp, "questiond"), filepath.Join(tmp, "bin"), filepath.Join(tmp, "state")
	copyRepository(t, root, clone)
	addr := freeAddr(t)
	base := "http://" + addr
	env := append(os.Environ(),
		"GOBIN="+gobin, "GOFLAGS=", "CGO_ENABLED=0",
		"PATH="+gobin+string(filepath.ListSeparator)+os.Getenv("PATH"),
		"QUESTIOND_ADDR="+addr, "QUESTIOND_SERVER="+base, "QUESTIOND_DATA_DIR="+state,
		"QUESTIOND_METRICS_ADDR=off", "QUESTIOND_TOKEN=", "QUESTIOND_OPERATOR_PASSWORD=",
		"OPENCODE_SERVER_PASSWORD=", "QUESTIOND_AGENT_TOKENS=")

	// The install line first: go run then finds its packages built.
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+installLine)
	cmd.Dir, cmd.Env = clone, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README's install line %q: %v\n%s", installLine, err, out)
	}
	if _, err := os.Stat(filepath.Join(gobin, "questiond")); err != nil {
		t.Fatalf("the install line put nothing in GOBIN: %v", err)
	}

	// The daemon, in its own process group: go run leaves the binary it
	// runs as a child of its own.
	daemon := exec.Command("bash", "-c", daemonLine)
	daemon.Dir, daemon.Env = clone, env
	daemon.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var daemonOut syncBuffer
	daemon.Stdout, daemon.Stderr = &daemonOut, &daemonOut
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	defer func() {
		_ = syscall.Kill(-daemon.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-daemon.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("the daemon (%s):\n%s", daemonLine, daemonOut.String())
		}
	}()

	deadline := time.Now().Add(5 * time.Minute) // go run builds first
	for {
		res, err := http.Get(base + "/global/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("the daemon line %q exited: %v", daemonLine, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not answer at %s within 5 minutes", base)
		}
		time.Sleep(200 * time.Millisecond)
	}

	type running struct {
		block string
		out   *syncBuffer
		done  chan error
	}
	var background []running
	check := func(block, out string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("walkthrough block\n%s\nfailed: %v\n%s", block, err, out)
			return
		}
		want := shapes(block)
		if len(want) == 0 {
			t.Errorf("walkthrough block\n%s\nshows no output to check it by", block)
		}
		for _, re := range want {
			if !re.MatchString(out) {
				t.Errorf("walkthrough block\n%s\nprinted\n%s\nwhich is not the shape it documents (%s)", block, out, re)
			}
		}
	}
	for _, block := range walk {
		run := exec.Command("bash", "-c", "set -euo pipefail\n"+strings.ReplaceAll(block, "http://127.0.0.1:4097", base))
		run.Dir, run.Env = clone, env
		out := &syncBuffer{}
		run.Stdout, run.Stderr = out, out
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- run.Wait() }()
		select {
		case err := <-done:
			check(block, out.String(), err)
		case <-time.After(3 * time.Second): // waits, as in a terminal of its own
			background = append(background, running{block, out, done})
			t.Cleanup(func() { _ = run.Process.Kill() })
		}
	}
	for _, b := range background {
		select {
		case err := <-b.done:
			check(b.block, b.out.String(), err)
		case <-time.After(30 * time.Second):
			t.Errorf("walkthrough block\n%s\nstill waits once the walkthrough is done; it printed\n%s", b.block, b.out.String())
		}
	}
	if len(background) == 0 {
		t.Error("no walkthrough block waited for the operator: the agent's ask should")
	}
}
