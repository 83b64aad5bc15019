// Package pgtest runs a throwaway PostgreSQL server for tests, from the
// Debian postgresql package, and hands each test a fresh database on it.
//
// One server serves a whole test binary: a package's TestMain calls Run,
// which stops the server (by its PID) once the tests are done, and each test
// calls Database for a database of its own. Tests that use it are heavy:
// they skip under -short. When PostgreSQL is missing, it is installed with
// apt-get if the tests run as root (as CI does); otherwise the test is
// skipped, or fails under CI=true (see testenv.Missing).
//
// Outside Go tests (test/withpostgres, for the Node suites), FindBinaries,
// Start and Close do the same for one server.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit/launch"
)

// Server is one running PostgreSQL postmaster.
type Server struct {
	bin  string // directory holding initdb and postgres
	dir  string // holds data/ and the server's log
	port int
	cred *syscall.Credential // the postgres user's, when running as root

	mu   sync.Mutex
	proc *os.Process
	done chan struct{} // closed when proc has exited
	log  *os.File
}

var (
	shared    *Server
	sharedErr error
	startOnce sync.Once
	databases atomic.Int64
)

// Run runs the package's tests and stops the shared server, if a test
// started it; TestMain returns its result to os.Exit.
func Run(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// Shared returns the test binary's server, starting it on first use. It is
// heavy: it skips under -short, and when PostgreSQL is missing.
func Shared(t testing.TB) *Server {
	t.Helper()
	testenv.Heavy(t, "runs a PostgreSQL server")
	startOnce.Do(func() {
		bin, err := FindBinaries()
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = Start(bin)
	})
	if errors.Is(sharedErr, ErrMissing) {
		testenv.Missing(t, "PostgreSQL (initdb, postgres)", "apt-get install postgresql ("+sharedErr.Error()+")")
	}
	if sharedErr != nil {
		t.Fatalf("starting PostgreSQL: %v", sharedErr)
	}
	return shared
}

// Database creates a fresh, empty database on the shared server and
// returns its URL; it is dropped when t ends.
func Database(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), databases.Add(1))
	if err := s.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// FORCE ends connections a test left open (a killed process's).
		if err := s.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("dropping database %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// URL is the libpq URL of database name on s.
func (s *Server) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// Exec runs one statement in the postgres database.
func (s *Server) Exec(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// ErrMissing is what FindBinaries returns, wrapped with the reason, when
// there is no PostgreSQL server to start and none could be installed.
var ErrMissing = errors.New("PostgreSQL server binaries not found")

// FindBinaries returns the directory of the newest installed PostgreSQL's
// initdb and postgres, installing the Debian package with apt-get when it
// is missing and the process runs as root.
func FindBinaries() (string, error) {
	if dir := lookBinaries(); dir != "" {
		return dir, nil
	}
	if err := testenv.InstallDebianPackage("postgresql"); err != nil {
		return "", fmt.Errorf("%w: %w", ErrMissing, err)
	}
	if dir := lookBinaries(); dir != "" {
		return dir, nil
	}
	return "", fmt.Errorf("%w even after installing the postgresql package", ErrMissing)
}

// lookBinaries finds Debian's versioned directories first (their initdb is
// not on PATH), newest version first, then PATH.
func lookBinaries() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = real
		}
		dirs = append(dirs, filepath.Dir(initdb))
	}
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir
		}
	}
	return ""
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// Start initialises a cluster in a new temporary directory and starts its
// postmaster on a free loopback port. As root, both run as the postgres
// user, which the package creates. Durability settings stay at their
// defaults (fsync and synchronous_commit on): the tests check what
// questiond acknowledges survives.
func Start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "questiond-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if err := s.init(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.Restart(); err != nil {
		_ = s.Close() // a postmaster that never became ready still runs
		return nil, err
	}
	return s, nil
}

// Close stops the server (as Stop does) and removes its directory, data and
// log included. The server cannot be restarted.
func (s *Server) Close() error {
	err := s.Stop()
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) init() error {
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root needs the postgres user (the postgresql package creates it): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		// The postgres user must reach its data directory.
		if err := os.Chmod(s.dir, 0o755); err != nil {
			return err
		}
		if err := os.Chown(s.dir, uid, gid); err != nil {
			return err
		}
	}
	cmd := s.command(filepath.Join(s.bin, "initdb"), "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// Restart starts the postmaster (again, after Stop or Kill) on the same
// port and data, and waits until it accepts connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("pgtest: the server is running")
	}
	if s.port == 0 {
		port, err := launch.FreePort()
		if err != nil {
			return err
		}
		s.port = port
	}
	logFile, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := s.command(filepath.Join(s.bin, "postgres"), "-D", s.data(),
		"-p", strconv.Itoa(s.port), "-k", s.data(),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=300",
		"-c", "shared_buffers=32MB",
		"-c", "fsync=on", "-c", "synchronous_commit=on",
		"-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { // see LeakOption
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	s.proc, s.done, s.log = cmd.Process, done, logFile
	return s.waitReady(done)
}

func (s *Server) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-exited:
			s.proc = nil
			return fmt.Errorf("postgres exited at start; its log:\n%s", s.tailLog())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after 60s: %v; its log:\n%s", err, s.tailLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) tailLog() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return strings.TrimSpace(string(data))
}

// Stop shuts the server down fast (SIGINT: sessions are ended, everything
// committed is kept) and waits for it to exit.
func (s *Server) Stop() error { return s.signal(syscall.SIGINT) }

// Kill stops the server the way a crash would (SIGQUIT, PostgreSQL's
// immediate shutdown: no checkpoint, connections cut). Committed
// transactions survive: recovery replays the WAL at Restart.
func (s *Server) Kill() error { return s.signal(syscall.SIGQUIT) }

func (s *Server) signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("signalling postgres %d: %w", s.proc.Pid, err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.proc.Kill()
		<-s.done
	}
	s.proc = nil
	return nil
}

// LeakOption tells a goleak check inside one test to ignore the goroutine
// that waits for the package's shared server, which the first test to ask
// for a database starts and which outlives every test.
func LeakOption() goleak.Option {
	return goleak.IgnoreAnyFunction("github.com/questiond/questiond/internal/pgtest.(*Server).Restart.func1")
}
