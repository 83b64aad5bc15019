package daemon_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/sse"
)

// Leak sources this guards: the HTTP server and its connections, the event
// broker, store timers, and a listener nobody served (and, on PostgreSQL,
// the pool and the change log's tailer).
func TestMain(m *testing.M) { goleak.VerifyTestMain(withPostgres{m}) }

// withPostgres runs the tests, then stops the PostgreSQL server they
// started, if any.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return pgtest.Run(w.m) }

// dyingListener fails every Accept, as a listener whose socket died does.
type dyingListener struct{ net.Listener }

func (l dyingListener) Accept() (net.Conn, error) { return nil, errors.New("the listener died") }

func config(t *testing.T) daemon.Config {
	return daemon.Config{
		Logger:   zaptest.NewLogger(t),
		Events:   sse.Options{Heartbeat: time.Hour},
		BoltPath: filepath.Join(t.TempDir(), "questiond.db"),
		Bolt:     pending.BoltOptions{NoSync: true},
	}
}

// When serving fails, Serve closes everything New opened: the database file
// is free for the next start.
func TestAServeFailureClosesEverything(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = dyingListener{ln}
	d, err := daemon.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Serve(); err == nil || !strings.Contains(err.Error(), "the listener died") {
		t.Fatalf("Serve on a dying listener: %v", err)
	}
	again, err := pending.OpenBolt(cfg.BoltPath, pending.BoltOptions{NoSync: true})
	if err != nil {
		t.Fatalf("the database after a serve failure: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener is still open")
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after Serve shut down: %v", err)
	}
}

// Shutdown of a daemon that never served closes its listener and file.
func TestShutdownBeforeServe(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	d, err := daemon.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := d.Addr().String()
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Serve(); err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("the listener is still open")
	}
	again, err := pending.OpenBolt(cfg.BoltPath, pending.BoltOptions{NoSync: true})
	if err != nil {
		t.Fatalf("the database after Shutdown: %v", err)
	}
	_ = again.Close()
}

// After Shutdown no new connection is served, and Serve returns nil.
func TestShutdownRefusesNewConnections(t *testing.T) {
	t.Parallel()
	d, err := daemon.New(context.Background(), config(t))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve() }()
	base := "http://" + d.Addr().String()
	res, err := http.Get(base + "/global/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if _, err := http.Get(base + "/global/health"); err == nil {
		t.Fatal("a new connection was served after Shutdown")
	}
}
