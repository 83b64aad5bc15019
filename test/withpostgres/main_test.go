package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testenv"
)

// The test binary plays three parts, chosen by roleEnv: the tests, the
// command under test (roleWrapper runs main), and the command it wraps
// (roleInspect, roleStubborn), which reports what it was given on stdout.
const (
	roleEnv      = "WITHPOSTGRES_TEST_ROLE"
	roleWrapper  = "wrapper"
	roleInspect  = "inspect"  // checks its databases, reports, exits 7
	roleStubborn = "stubborn" // reports, then ignores SIGTERM until killed
	inspectExit  = 7
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case roleWrapper:
		os.Setenv(roleEnv, os.Getenv(roleEnv+"_CHILD"))
		main()
	case roleInspect:
		inspect()
		os.Exit(inspectExit)
	case roleStubborn:
		signal.Ignore(syscall.SIGTERM)
		inspect()
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// report is what the wrapped command saw: its databases, and the server's
// postmaster and data directory, to check after the run that both are gone.
type report struct {
	URLs          []string `json:"urls"`
	Tables        []int    `json:"tables"`
	PostmasterPID int      `json:"postmaster_pid"`
	DataDir       string   `json:"data_dir"`
	Err           string   `json:"err,omitempty"`
}

func inspect() {
	r := report{URLs: strings.Fields(os.Getenv(EnvURLs))}
	if err := r.inspect(context.Background()); err != nil {
		r.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}

func (r *report) inspect(ctx context.Context) error {
	for _, url := range r.URLs {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var tables int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
			return err
		}
		r.Tables = append(r.Tables, tables)
		// Leave something behind: the next database must not show it.
		if _, err := conn.Exec(ctx, "CREATE TABLE left_behind (v int)"); err != nil {
			return err
		}
		if r.DataDir == "" {
			if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&r.DataDir); err != nil {
				return err
			}
		}
	}
	pidFile, err := os.ReadFile(filepath.Join(r.DataDir, "postmaster.pid"))
	if err != nil {
		return err
	}
	r.PostmasterPID, err = strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	return err
}

// start runs withpostgres (this binary as roleWrapper) around this binary as
// child, and returns once the child has reported.
func start(t *testing.T, child string, args ...string) (*exec.Cmd, report, *strings.Builder) {
	t.Helper()
	testenv.Heavy(t, "runs a PostgreSQL server")
	if _, err := pgtest.FindBinaries(); errors.Is(err, pgtest.ErrMissing) {
		testenv.Missing(t, "PostgreSQL (initdb, postgres)", "apt-get install postgresql ("+err.Error()+")")
	}
	cmd := exec.Command(os.Args[0], append(args, os.Args[0])...)
	cmd.Env = append(os.Environ(), roleEnv+"="+roleWrapper, roleEnv+"_CHILD="+child)
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var r report
	if err := json.NewDecoder(bufio.NewReader(stdout)).Decode(&r); err != nil {
		t.Fatalf("reading the command's report: %v; withpostgres said:\n%s", err, stderr)
	}
	if r.Err != "" {
		t.Fatalf("the command under withpostgres: %s", r.Err)
	}
	return cmd, r, stderr
}

// exitCode waits for withpostgres and returns its status.
func exitCode(t *testing.T, cmd *exec.Cmd, stderr fmt.Stringer) int {
	t.Helper()
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("waiting for withpostgres: %v\n%s", err, stderr)
	}
	return cmd.ProcessState.ExitCode()
}

// assertServerGone checks that nothing of the server outlives withpostgres.
func assertServerGone(t *testing.T, r report) {
	t.Helper()
	if err := syscall.Kill(r.PostmasterPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("postmaster %d after withpostgres exited: kill -0 = %v, want ESRCH", r.PostmasterPID, err)
	}
	if _, err := os.Stat(r.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory %s after withpostgres exited: %v, want it removed", r.DataDir, err)
	}
}

func TestCommandGetsFreshDatabasesAndItsStatus(t *testing.T) {
	cmd, r, stderr := start(t, roleInspect, "-databases", "3")
	if got := exitCode(t, cmd, stderr); got != inspectExit {
		t.Errorf("withpostgres exited %d, want the command's %d; it said:\n%s", got, inspectExit, stderr)
	}
	if len(r.URLs) != 3 || r.URLs[0] == r.URLs[1] || r.URLs[1] == r.URLs[2] || r.URLs[0] == r.URLs[2] {
		t.Errorf("%s = %q, want 3 different URLs", EnvURLs, r.URLs)
	}
	for i, n := range r.Tables {
		if n != 0 {
			t.Errorf("database %d had %d tables, want every one empty", i+1, n)
		}
	}
	assertServerGone(t, r)
}

func TestSignalReachesTheCommandAndTheServerStops(t *testing.T) {
	cmd, r, stderr := start(t, roleStubborn, "-grace", "200ms")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The command ignores SIGTERM, so only the kill after -grace ends it.
	if got, want := exitCode(t, cmd, stderr), 128+int(syscall.SIGKILL); got != want {
		t.Errorf("withpostgres exited %d, want %d (the command killed); it said:\n%s", got, want, stderr)
	}
	if !strings.Contains(stderr.String(), "killing it") {
		t.Errorf("withpostgres did not say it killed the command:\n%s", stderr)
	}
	assertServerGone(t, r)
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-databases", "0", "true"}} {
		var out strings.Builder
		if got := run(args, &out); got != 2 || !strings.Contains(out.String(), "usage: withpostgres") {
			t.Errorf("run(%q) = %d, %q; want 2 and the usage", args, got, out.String())
		}
	}
}
