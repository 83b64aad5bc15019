package replicas

import (
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/pgtest"
)

// A replica started before its database answers (docker compose starts
// them together) waits for it, saying so once, and serves once it answers.
func TestReplicaWaitsForItsDatabaseAtStart(t *testing.T) {
	target := pgtest.Database(t)
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	// The replica is given an address where nothing listens yet; after a
	// while a forwarder to the real server opens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	late := l.Addr().String()
	l.Close()
	server := u.Host
	u.Host = late
	opened := make(chan struct{})
	time.AfterFunc(1500*time.Millisecond, func() {
		defer close(opened)
		forward(t, late, server)
	})
	started := time.Now()
	r := startReplica(t, "late", u.String())
	<-opened
	if took := time.Since(started); took < time.Second {
		t.Fatalf("the replica started in %s, before its database could answer", took)
	}
	logs := r.log()
	if n := strings.Count(logs, "PostgreSQL does not answer yet"); n != 1 {
		t.Fatalf("the wait was logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "PostgreSQL answers; going on") {
		t.Fatalf("the end of the wait was not logged:\n%s", logs)
	}
	create(t, r)
}

// A database that answers with a refusal is not waited for: the replica
// exits at once, saying why.
func TestReplicaRefusedByItsDatabaseExitsAtOnce(t *testing.T) {
	target := pgtest.Database(t)
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database"
	cmd := exec.Command(binary(t), "--store", "postgres", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "QUESTIOND_DATABASE_URL="+u.String())
	done := make(chan struct{})
	var out []byte
	go func() {
		defer close(done)
		out, err = cmd.CombinedOutput()
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the replica did not exit on a missing database:\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), "PostgreSQL refused the connection") ||
		!strings.Contains(string(out), "no_such_database") || strings.Contains(string(out), "waiting for it") {
		t.Fatalf("exit %v, want a refusal naming the database, without waiting:\n%s", err, out)
	}
}

// forward accepts connections on addr and pipes each to target, until the
// test ends: then it closes them all.
func forward(t *testing.T, addr, target string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("forwarder: %v", err)
		return
	}
	var (
		mu    sync.Mutex
		open  []net.Conn
		pipes sync.WaitGroup
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		pipes.Wait()
	})
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			open = append(open, in, out)
			mu.Unlock()
			pipes.Add(2)
			pipe := func(dst, src net.Conn) {
				defer pipes.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(in, out)
			go pipe(out, in)
		}
	}()
}
