package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/questiond/questiond/internal/testenv"
)

// The image cannot be built here (its base layers cannot be pulled), so
// these tests read the Dockerfile with BuildKit's own parser and check what
// a build would do: the binary it builds is the one `make build` builds,
// the file it copies is that binary, it runs as a non-root user, it exposes
// the port it listens on, and its HEALTHCHECK runs a subcommand that exists
// and passes against a daemon started with the image's environment.

const repoRoot = "../.."

// image is what the Dockerfile says, stage by stage.
type image struct {
	buildStage  string
	goBuild     []string          // the words of the build stage's go build command
	args        map[string]string // the build stage's ARGs and their defaults
	copies      []*parser.Node    // COPY of the final stage
	entrypoint  []string
	healthcheck []string
	healthJSON  bool // HEALTHCHECK in exec form (no shell in the image)
	entryJSON   bool
	user        string
	exposed     []string
	env         map[string]string // ENV of the final stage
}

// buildVersion is given to both builds; each must put it in main.version.
const buildVersion = "9.8.7-dockerfile-test"

func readDockerfile(t *testing.T) *image {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parsed, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	img := &image{args: map[string]string{}, env: map[string]string{}}
	stage, stages := "", 0
	final := func() bool { return stages == countFrom(parsed.AST) }
	for _, n := range parsed.AST.Children {
		words := nodeWords(n)
		switch strings.ToLower(n.Value) {
		case "from":
			stages++
			stage = ""
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				stage = words[2]
			}
		case "arg":
			for _, w := range words {
				name, value, _ := strings.Cut(w, "=")
				img.args[name] = value
			}
		case "run":
			if len(words) == 1 && strings.Contains(words[0], "go build") {
				img.buildStage = stage
				img.goBuild = shellWords(t, words[0], img.args, "go build")
			}
		case "copy":
			if final() {
				img.copies = append(img.copies, n)
			}
		case "entrypoint":
			img.entrypoint, img.entryJSON = words, n.Attributes["json"]
		case "healthcheck":
			if len(words) > 0 && strings.EqualFold(words[0], "CMD") {
				img.healthcheck, img.healthJSON = words[1:], n.Attributes["json"]
			}
		case "user":
			img.user = words[0]
		case "expose":
			img.exposed = append(img.exposed, words...)
		case "env":
			if final() {
				for i := 0; i+1 < len(words); i += 3 { // key, value, "="
					img.env[words[i]] = words[i+1]
				}
			}
		}
	}
	if img.goBuild == nil {
		t.Fatal("the Dockerfile has no RUN with go build")
	}
	return img
}

func countFrom(root *parser.Node) int {
	n := 0
	for _, c := range root.Children {
		if strings.EqualFold(c.Value, "from") {
			n++
		}
	}
	return n
}

func nodeWords(n *parser.Node) []string {
	var words []string
	for w := n.Next; w != nil; w = w.Next {
		words = append(words, w.Value)
	}
	return words
}

// shellWords splits a shell command line as sh would (quotes, ${VAR} from
// vars with VERSION set to buildVersion), and returns the &&-separated part
// that contains marker.
func shellWords(t *testing.T, line string, vars map[string]string, marker string) []string {
	t.Helper()
	env := []string{"VERSION=" + buildVersion}
	for name, value := range vars {
		if name != "VERSION" {
			env = append(env, name+"="+value)
		}
	}
	words, err := shell.NewLex('\\').ProcessWords(line, shell.EnvsFromSlice(env))
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	for part := range strings.SplitSeq(strings.Join(words, "\x00"), "\x00&&\x00") {
		if strings.Contains(strings.ReplaceAll(part, "\x00", " "), marker) {
			return strings.Split(part, "\x00")
		}
	}
	t.Fatalf("%q has no %q", line, marker)
	return nil
}

// makeBuild is the command `make build` runs, as make expands it.
func makeBuild(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Missing(t, "make", "apt-get install make")
	}
	cmd := exec.Command("make", "--no-print-directory", "-n", "build", "GO=go", "BIN=bin/questiond", "VERSION="+buildVersion)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	return shellWords(t, strings.TrimSpace(string(out)), nil, "go build")
}

// withoutOutput removes "-o file" from a go build command line, and
// returns the file.
func withoutOutput(t *testing.T, words []string) (rest []string, output string) {
	t.Helper()
	i := slices.Index(words, "-o")
	if i < 0 || i+1 >= len(words) {
		t.Fatalf("%q has no -o", words)
	}
	return slices.Concat(words[:i], words[i+2:]), words[i+1]
}

func TestDockerfileBuildsWhatMakeBuilds(t *testing.T) {
	t.Parallel()
	img := readDockerfile(t)
	docker, built := withoutOutput(t, img.goBuild)
	mk, _ := withoutOutput(t, makeBuild(t))
	if !slices.Equal(docker, mk) {
		t.Errorf("the Dockerfile builds with\n  %q\nbut make build with\n  %q", docker, mk)
	}
	if img.args["VERSION"] == "" {
		t.Error("the Dockerfile has no ARG VERSION with a default, which its build puts in main.version")
	}

	// The final stage copies that binary from the build stage and runs it.
	var installed string
	for _, c := range img.copies {
		words := nodeWords(c)
		if slices.Contains(c.Flags, "--from="+img.buildStage) && len(words) == 2 && words[0] == built {
			installed = words[1]
		}
	}
	if installed == "" {
		t.Fatalf("no COPY --from=%s of %s, the file go build writes", img.buildStage, built)
	}
	if !img.entryJSON || len(img.entrypoint) != 1 || img.entrypoint[0] != installed {
		t.Errorf("ENTRYPOINT %q (exec form %v), want [%q]: the binary the image holds", img.entrypoint, img.entryJSON, installed)
	}
	if !img.healthJSON || !slices.Equal(img.healthcheck, []string{installed, "health"}) {
		t.Errorf("HEALTHCHECK CMD %q (exec form %v), want [%q \"health\"]: there is no shell in the image", img.healthcheck, img.healthJSON, installed)
	}

	if u := img.user; u == "" || u == "root" || u == "0" || strings.HasPrefix(u, "root:") || strings.HasPrefix(u, "0:") {
		t.Errorf("USER %q: the image must run as a non-root user", u)
	}
	_, listenPort, err := net.SplitHostPort(img.env["QUESTIOND_ADDR"])
	if err != nil {
		t.Fatalf("ENV QUESTIOND_ADDR %q: %v", img.env["QUESTIOND_ADDR"], err)
	}
	_, defaultPort, _ := net.SplitHostPort(defaultAddr)
	if !slices.Equal(img.exposed, []string{listenPort}) || listenPort != defaultPort {
		t.Errorf("EXPOSE %q, image listens on port %s, questiond's default port %s: want one port, the same", img.exposed, listenPort, defaultPort)
	}
}

// The binary the Dockerfile's command builds has the health subcommand the
// HEALTHCHECK runs, and that check, with the image's environment, passes
// while the daemon serves and fails once it is gone.
func TestDockerfileHealthcheckPasses(t *testing.T) {
	testenv.Heavy(t, "builds the binary as the Dockerfile does and runs it")
	img := readDockerfile(t)
	bin := filepath.Join(t.TempDir(), "questiond")
	withoutOutput(t, img.goBuild) // it has an -o
	args := slices.Clone(img.goBuild)
	args[slices.Index(args, "-o")+1] = bin
	var env []string
	for len(args) > 0 && strings.Contains(args[0], "=") { // CGO_ENABLED=0 …
		env, args = append(env, args[0]), args[1:]
	}
	if len(args) < 2 || args[0] != "go" || args[1] != "build" {
		t.Fatalf("the build command %q does not start with go build", img.goBuild)
	}
	build := exec.Command("go", args[1:]...)
	build.Dir, build.Env = repoRoot, append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", build.Args, err, out)
	}
	if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.Contains(string(out), buildVersion) {
		t.Errorf("--version of the image's binary: %q %v, want %s (from ARG VERSION)", out, err, buildVersion)
	}
	if out, err := exec.Command(bin, "health", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "questiond health") {
		t.Fatalf("health --help: %v %q", err, out)
	}

	// The image's environment, but a free port and a writable data
	// directory, and the credentials that listening on 0.0.0.0 needs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	host, _, _ := net.SplitHostPort(img.env["QUESTIOND_ADDR"])
	runEnv := []string{"PATH=" + os.Getenv("PATH")}
	for name, value := range img.env {
		switch name {
		case "QUESTIOND_ADDR":
			value = net.JoinHostPort(host, port)
		case "QUESTIOND_DATA_DIR":
			value = t.TempDir()
		}
		runEnv = append(runEnv, name+"="+value)
	}
	runEnv = append(runEnv, "QUESTIOND_OPERATOR_PASSWORD=dockerfile-test-password", "QUESTIOND_AGENT_TOKENS=bot=dockerfile-test-token-0123",
		"QUESTIOND_LOG_FORMAT=json")
	daemon := exec.Command(bin)
	daemon.Env = runEnv
	var logs syncBuffer
	daemon.Stderr = &logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	t.Cleanup(func() {
		_ = daemon.Process.Kill()
		<-exited
	})

	check := func() (int, string) {
		hc := exec.Command(bin, img.healthcheck[1:]...)
		hc.Env = runEnv
		out, err := hc.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		status, out := check()
		if status == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HEALTHCHECK never passed: %d %q\ndaemon log:\n%s", status, out, logs.String())
		}
		time.Sleep(50 * time.Millisecond) // a real process starting; nothing to synchronise on
	}
	if err := daemon.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("the daemon did not stop on SIGTERM")
	}
	exited <- nil // for the cleanup
	if status, out := check(); status != 1 || !bytes.Contains([]byte(out), []byte("nothing answers")) {
		t.Errorf("HEALTHCHECK with the daemon gone: %d %q, want 1 and why", status, out)
	}
}
