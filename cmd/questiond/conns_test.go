package main

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// A client's spare connection that never sent a request must not hold a
// shutdown: net/http alone waits up to five seconds for it.
func TestShutdownDoesNotWaitForSilentConnections(t *testing.T) {
	testenv.Heavy(t, "runs the real binary")
	p := startProcess(t, "--store", "memory")
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(50 * time.Millisecond) // let the server accept it
	start := time.Now()
	if err := p.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, p.logs.String())
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %s with one silent connection open", took)
	}
}
