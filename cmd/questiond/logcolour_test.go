package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runLoggingTo runs the daemon with args, its log going to out, until it
// listens, then stops it.
func runLoggingTo(t *testing.T, out *os.File, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"--addr", "127.0.0.1:0", "--store", "memory", "--metrics-addr", "off"}, args...),
			envOf(nil), io.Discard, out, ready)
	}()
	select {
	case <-ready:
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("the daemon stopped with %v", err)
		}
	case err := <-done:
		t.Fatalf("the daemon did not start: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon neither started nor failed")
	}
}

// --log-format console into a file (a service's log, `2>questiond.log`)
// writes plain lines: before, every level came wrapped in ANSI colour
// codes, which a file, a pager or a log shipper shows as noise.
func TestConsoleLogsInAFileHaveNoColourCodes(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "questiond.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	runLoggingTo(t, file, "--log-format", "console")
	logs, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "questiond listening") {
		t.Fatalf("no console line saying questiond listens:\n%q", logs)
	}
	if strings.Contains(string(logs), "\x1b[") {
		t.Errorf("console logs written to a file hold colour codes:\n%q", logs)
	}
}
