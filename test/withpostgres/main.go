// Command withpostgres runs a command beside a throwaway PostgreSQL server
// holding fresh, empty databases for it, and stops the server once the
// command has ended, however it ended: it is how the Node suites of test/
// run on --store postgres (test/node-suite.sh with QUESTIOND_TEST_STORE=postgres).
//
//	withpostgres [-databases n] [-grace d] command [arg...]
//
// The server is internal/pgtest's (Debian's postgresql package, installed
// with apt-get when missing and root). The command gets the databases' URLs,
// space-separated, in QUESTIOND_TEST_DATABASE_URLS, and withpostgres exits
// with its status. SIGINT, SIGTERM and SIGHUP are passed on to the command;
// one that has not exited -grace after the first is killed. When PostgreSQL
// is missing, withpostgres fails under CI=true and elsewhere skips the
// command, saying so, with status 0 (as testenv.Missing does for Go tests).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testenv"
)

// EnvURLs names the variable that hands the command its databases.
const EnvURLs = "QUESTIOND_TEST_DATABASE_URLS"

// forwarded are the signals passed on to the command instead of ending
// withpostgres at once, which would leave the server running.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// options are withpostgres's flags and the command it runs.
type options struct {
	databases int
	grace     time.Duration
	command   []string
}

func run(args []string, stderr io.Writer) int {
	opts, ok := parseArgs(args, stderr)
	if !ok {
		return 2
	}
	// Before the server starts: a signal while it starts must still stop it.
	signals := make(chan os.Signal, len(forwarded))
	signal.Notify(signals, forwarded...)
	defer signal.Stop(signals)

	server, status := startServer(opts.command, stderr)
	if server == nil {
		return status
	}
	defer func() {
		if err := server.Close(); err != nil {
			fmt.Fprintln(stderr, "withpostgres: stopping PostgreSQL:", err)
		}
	}()
	select {
	case sig := <-signals:
		fmt.Fprintf(stderr, "withpostgres: %v while PostgreSQL started; not running the command\n", sig)
		return 128 + int(sig.(syscall.Signal))
	default:
	}

	urls, err := createDatabases(server, opts.databases)
	if err != nil {
		fmt.Fprintln(stderr, "withpostgres:", err)
		return 1
	}
	return runCommand(opts.command, urls, signals, opts.grace, stderr)
}

func parseArgs(args []string, stderr io.Writer) (options, bool) {
	var opts options
	flags := flag.NewFlagSet("withpostgres", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.IntVar(&opts.databases, "databases", 1, "how many empty databases the command gets")
	flags.DurationVar(&opts.grace, "grace", 30*time.Second, "how long the command has to exit after a signal before it is killed")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: withpostgres [-databases n] [-grace d] command [arg...]")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return opts, false
	}
	opts.command = flags.Args()
	if len(opts.command) == 0 || opts.databases < 1 {
		flags.Usage()
		return opts, false
	}
	return opts, true
}

// startServer starts a throwaway server, or returns nil and the status to
// exit with: 0 when PostgreSQL is missing outside CI (command skipped).
func startServer(command []string, stderr io.Writer) (*pgtest.Server, int) {
	bin, err := pgtest.FindBinaries()
	if errors.Is(err, pgtest.ErrMissing) {
		if testenv.InCI() {
			fmt.Fprintf(stderr, "withpostgres: %v (CI=true, so this is a failure, not a skip); install Debian's postgresql package\n", err)
			return nil, 1
		}
		fmt.Fprintf(stderr, "withpostgres: %v; SKIPPED %s (under CI=true this fails)\n", err, strings.Join(command, " "))
		return nil, 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "withpostgres:", err)
		return nil, 1
	}
	server, err := pgtest.Start(bin)
	if err != nil {
		fmt.Fprintln(stderr, "withpostgres: starting PostgreSQL:", err)
		return nil, 1
	}
	return server, 0
}

// createDatabases makes n empty databases on server and returns their URLs.
func createDatabases(server *pgtest.Server, n int) ([]string, error) {
	urls := make([]string, n)
	for i := range urls {
		name := fmt.Sprintf("questiond_%d", i+1)
		if err := server.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
			return nil, fmt.Errorf("creating database %s: %w", name, err)
		}
		urls[i] = server.URL(name)
	}
	return urls, nil
}

// runCommand runs argv with the databases' URLs and returns the status
// withpostgres exits with: the command's, or 128 plus the signal that
// ended it, as a shell reports it.
func runCommand(argv, urls []string, signals <-chan os.Signal, grace time.Duration, stderr io.Writer) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), EnvURLs+"="+strings.Join(urls, " "))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "withpostgres:", err)
		return 1
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var deadline <-chan time.Time // set by the first signal
	for {
		select {
		case sig := <-signals:
			_ = cmd.Process.Signal(sig)
			if deadline == nil {
				deadline = time.After(grace)
			}
		case <-deadline:
			fmt.Fprintf(stderr, "withpostgres: %s still running %v after a signal; killing it\n", argv[0], grace)
			_ = cmd.Process.Kill()
			deadline = nil
		case err := <-exited:
			return exitStatus(cmd, err, stderr)
		}
	}
}

func exitStatus(cmd *exec.Cmd, err error, stderr io.Writer) int {
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fmt.Fprintln(stderr, "withpostgres:", err)
		return 1
	}
	if status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return 128 + int(status.Signal())
	}
	return cmd.ProcessState.ExitCode()
}
